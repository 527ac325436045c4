"""Compiling an ``AlertRule`` object into an engine :class:`~clusterpulse_alerts.engine.Rule`.

The condition is written in the MetricSource expression language, compiled by whichever
plugin answers ``clusterpulse_expression_compiler`` (this plugin imports none). Identifiers
are the cluster metrics (``pods_running``, ``nodes_ready`` ...); ``agg(source, name, key...)``
reads a MetricSource aggregation on the cluster (``agg('pod-phases', 'by_phase', 'Failed')``;
``source`` is ``<name>`` in the rule's namespace or ``<namespace>/<name>``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Protocol

import attrs
from clusterpulse_model import ClusterMetrics
from clusterpulse_model.alerting import ClusterView, Finding

from clusterpulse_alerts.engine import Rule
from clusterpulse_alerts.settings import SEVERITIES
from clusterpulse_core.contributions import Contribution
from clusterpulse_core.serde import unstructure

#: Identifiers a condition may use: the scalar cluster metrics.
METRIC_NAMES = frozenset(f.name for f in attrs.fields(ClusterMetrics) if f.name not in ("timestamp", "namespace_list"))
AGG_FUNCTION = "agg"
_DURATION = re.compile(r"([0-9]+)(ms|s|m|h)")
#: The longest duration text read (checked before the text reaches :data:`_DURATION`).
MAX_DURATION_LENGTH = 32
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
DEFAULT_MESSAGE = "AlertRule {rule} fires on cluster {cluster}"
#: Bounds of the spec, checked by :func:`check_spec` and stated in the CRD (crd.py).
MAX_CONDITION = 4_096
MAX_MESSAGE = 1_024
MAX_ALERT_NAME = 253
MAX_FOR_SECONDS = 7 * 86_400
MAX_LABEL_KEY = 317  # a DNS-1123 prefix (253), "/" and a name (63)
MAX_LABEL_VALUE = 1_024  # as a ClusterConnection's spec.labels
MAX_SELECTOR_ENTRIES = 64
MAX_EXPRESSION_VALUES = 64


class CompiledExpression(Protocol):
    """What this plugin needs of a compiled expression (``clusterpulse_expression_compiler``)."""

    references: tuple[str, ...]

    def evaluate(self, values: Mapping[str, Any] | None) -> Any:
        """The expression's value with identifiers looked up in ``values``."""


class ExpressionCompiler(Protocol):
    """``compile(text, functions)``, answered by the plugin that declares the expression language."""

    def __call__(self, text: str, functions: Mapping[str, Any], /) -> CompiledExpression: ...


class RuleError(Exception):
    """An invalid AlertRule; ``field`` names the spec field, ``position`` the offset in the condition."""

    def __init__(self, field: str, detail: str, position: int | None = None) -> None:
        self.field = field
        self.detail = detail
        self.position = position
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"{field}: {detail}{where}")


def _shown(value: Any) -> str:
    """A bad value for a message: its repr, at most 64 characters of it."""
    text = repr(value)
    return text if len(text) <= 64 else f"{text[:60]}... ({len(text)} characters)"


def parse_duration(text: Any, field: str = "spec.for") -> float:
    """``30s``, ``5m``, ``1h30m``, ``500ms`` or ``0`` in seconds (a string: a number is not taken as seconds)."""
    if not isinstance(text, str):
        raise RuleError(field, f"expected a duration string such as 30s or 5m, got {type(text).__name__}")
    if text == "0":
        return 0.0
    if len(text) > MAX_DURATION_LENGTH:
        raise RuleError(field, f"is longer than {MAX_DURATION_LENGTH} characters ({len(text)})")
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise RuleError(field, f"expected a duration such as 30s, 5m or 1h30m, got {_shown(text)}")
    seconds = sum(int(number) * _UNITS[unit] for number, unit in parts)
    if seconds > MAX_FOR_SECONDS:
        raise RuleError(field, f"must be at most 7 days ({MAX_FOR_SECONDS} s), got {text} ({seconds:.0f} s)")
    return seconds


def _string(spec: Mapping[str, Any], name: str, longest: int, shortest: int = 0) -> None:
    value = spec.get(name)
    if value is None:
        return
    field = f"spec.{name}"
    if not isinstance(value, str):
        raise RuleError(field, f"expected a string, got {type(value).__name__}")
    if len(value) > longest:
        raise RuleError(field, f"is longer than {longest} characters ({len(value)})")
    if len(value) < shortest:
        raise RuleError(field, "must not be empty")


def _label_string(value: Any, field: str, longest: int) -> str:
    if not isinstance(value, str):
        raise RuleError(field, f"expected a string, got {type(value).__name__}")
    if len(value) > longest:
        raise RuleError(field, f"is longer than {longest} characters ({len(value)})")
    return value


def check_spec(spec: Any) -> Mapping[str, Any]:
    """Every raw field of an AlertRule spec, without coercion; :class:`RuleError` names the first bad one.

    Types (a number is not a duration, a number not a label value), lengths, counts and enum
    values; the condition's meaning is the compiler's.
    """
    if not isinstance(spec, Mapping):
        raise RuleError("spec", f"expected an object, got {type(spec).__name__}")
    condition = spec.get("condition")
    if not isinstance(condition, str) or not condition.strip():
        raise RuleError("spec.condition", "required: an expression such as pods_running > 100")
    _string(spec, "condition", MAX_CONDITION)
    severity = spec.get("severity", "warning")
    if severity not in SEVERITIES or not isinstance(severity, str):
        raise RuleError("spec.severity", f"expected one of {', '.join(SEVERITIES)}, got {_shown(severity)}")
    parse_duration(spec.get("for", "0s"))
    _string(spec, "message", MAX_MESSAGE)
    _string(spec, "alertName", MAX_ALERT_NAME, shortest=1)
    read_selector(spec.get("clusterSelector"))
    return spec


@attrs.frozen
class Selector:
    """A cluster label selector (``matchLabels`` and ``matchExpressions``)."""

    match_labels: Mapping[str, str] = attrs.field(factory=dict)
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a cluster with ``labels`` is selected."""
        for key, value in self.match_labels.items():
            if labels.get(key) != value:
                return False
        for key, operator, values in self.expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True


def _entries(value: Any, field: str, kind: type[dict[Any, Any]] | type[list[Any]], most: int) -> Any:
    if value is None:
        return kind()
    if not isinstance(value, kind):
        wanted = "an object" if kind is dict else "a list"
        raise RuleError(field, f"expected {wanted}, got {type(value).__name__}")
    if len(value) > most:
        raise RuleError(field, f"has more than {most} entries ({len(value)})")
    return value


def read_selector(raw: Any) -> Selector:
    """``spec.clusterSelector``, checked without coercion; errors name the field."""
    base = "spec.clusterSelector"
    if raw is None:
        return Selector()
    if not isinstance(raw, Mapping):
        raise RuleError(base, f"expected an object, got {type(raw).__name__}")
    labels = {}
    for key, value in _entries(raw.get("matchLabels"), f"{base}.matchLabels", dict, MAX_SELECTOR_ENTRIES).items():
        field = f"{base}.matchLabels.{str(key)[:64]}"
        _label_string(key, field, MAX_LABEL_KEY)
        labels[key] = _label_string(value, field, MAX_LABEL_VALUE)
    expressions = []
    items = _entries(raw.get("matchExpressions"), f"{base}.matchExpressions", list, MAX_SELECTOR_ENTRIES)
    for index, item in enumerate(items):
        field = f"{base}.matchExpressions[{index}]"
        if not isinstance(item, Mapping):
            raise RuleError(field, f"expected an object with key and operator, got {type(item).__name__}")
        key = _label_string(item.get("key"), f"{field}.key", MAX_LABEL_KEY)
        operator = item.get("operator")
        if operator not in _OPERATORS or not isinstance(operator, str):
            raise RuleError(f"{field}.operator", f"expected one of {', '.join(_OPERATORS)}, got {_shown(operator)}")
        values = _entries(item.get("values"), f"{field}.values", list, MAX_EXPRESSION_VALUES)
        if operator in ("In", "NotIn") and not values:
            raise RuleError(f"{field}.values", f"operator {operator} needs values")
        if operator in ("Exists", "DoesNotExist") and values:
            raise RuleError(f"{field}.values", f"operator {operator} takes no values")
        checked = [_label_string(v, f"{field}.values[{i}]", MAX_LABEL_VALUE) for i, v in enumerate(values)]
        expressions.append((key, operator, frozenset(checked)))
    return Selector(labels, tuple(expressions))


class _Scope:
    """What ``agg()`` reads during one evaluation."""

    __slots__ = ("aggregations", "missing", "namespace")

    def __init__(self, aggregations: Mapping[str, Mapping[str, Any]], namespace: str) -> None:
        self.aggregations = aggregations
        self.namespace = namespace
        self.missing = False


# Set only around one rule's evaluation (see AlertRuleCheck.__call__), so agg() reads the
# aggregations of the cluster being evaluated without making them part of the expression.
_SCOPE: ContextVar[_Scope | None] = ContextVar("clusterpulse_alerts_scope", default=None)


def agg(source: Any, name: Any, *keys: Any) -> Any:
    """``agg(source, aggregation, key...)``: a MetricSource aggregation value on the current cluster.

    ``null`` when the aggregation or a key is missing; a MetricSource without data on the
    cluster makes the whole condition undecided (the alert neither fires nor resolves).
    """
    scope = _SCOPE.get()
    if scope is None or not isinstance(source, str):
        return None
    source_id = source if "/" in source else f"{scope.namespace}/{source}"
    values = scope.aggregations.get(source_id)
    if values is None:
        scope.missing = True
        return None
    value: Any = values.get(str(name))
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(str(key))
    return value if value is None or isinstance(value, bool | int | float | str) else None


AGG_CONTRIBUTION = Contribution(AGG_FUNCTION, agg, "alerts", {"min_args": 2, "max_args": None})


def metrics_context(metrics: ClusterMetrics) -> dict[str, Any]:
    """The identifiers of a condition: every scalar cluster metric."""
    data: dict[str, Any] = unstructure(metrics)
    return {k: v for k, v in data.items() if k in METRIC_NAMES}


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return isinstance(value, int | float) and value != 0


@attrs.frozen
class AlertRuleCheck:
    """The ``check(view)`` of one compiled AlertRule."""

    key: str
    namespace: str
    selector: Selector
    expression: CompiledExpression = attrs.field(eq=False)
    uses_metrics: bool
    message: str
    alert_name: str
    severity: str

    def __call__(self, view: ClusterView) -> list[Finding] | None:
        if not self.selector.matches(view.labels):
            return []
        if self.uses_metrics and view.metrics is None:
            return None
        context = metrics_context(view.metrics) if view.metrics is not None else {}
        scope = _Scope(view.aggregations, self.namespace)
        token = _SCOPE.set(scope)
        try:
            result = self.expression.evaluate(context)
        finally:
            _SCOPE.reset(token)
        if scope.missing:
            return None
        if not _truthy(result):
            return []
        return [Finding("cluster", view.name, self.render(view.name, context))]

    def render(self, cluster: str, context: Mapping[str, Any]) -> str:
        """The message with ``{cluster}``, ``{rule}``, ``{severity}`` and metric placeholders filled."""
        names = {"cluster": cluster, "rule": self.alert_name, "severity": self.severity, **context}

        def fill(match: re.Match[str]) -> str:
            value = names.get(match.group(1))
            return match.group(0) if value is None else str(value)

        return _PLACEHOLDER.sub(fill, self.message)


def rule_key(namespace: str, name: str) -> str:
    """The engine key of an AlertRule."""
    return f"AlertRule/{namespace}/{name}"


def compile_rule(obj: Mapping[str, Any], compiler: ExpressionCompiler | None, functions: Mapping[str, Any]) -> Rule:
    """An AlertRule object as an engine rule; :class:`RuleError` names the bad field."""
    meta = obj.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    spec = check_spec(obj.get("spec"))
    condition = spec["condition"]
    if compiler is None:
        raise RuleError("spec.condition", "no plugin provides the expression compiler (enable metricsource)")
    try:
        expression = compiler(condition, {**functions, AGG_FUNCTION: AGG_CONTRIBUTION})
    except Exception as exc:
        detail = getattr(exc, "message", None) or str(exc)
        raise RuleError("spec.condition", str(detail), getattr(exc, "position", None)) from exc
    for reference in expression.references:
        if reference not in METRIC_NAMES:
            position = _position_of(condition, reference)
            known = ", ".join(sorted(METRIC_NAMES))
            raise RuleError("spec.condition", f"unknown metric {reference!r} (known: {known})", position)
    severity = spec.get("severity", "warning")
    for_seconds = parse_duration(spec.get("for", "0s"))
    message = spec.get("message") or DEFAULT_MESSAGE
    alert_name = spec.get("alertName") or name
    key = rule_key(namespace, name)
    check = AlertRuleCheck(
        key,
        namespace,
        read_selector(spec.get("clusterSelector")),
        expression,
        bool(expression.references),
        message,
        alert_name,
        severity,
    )
    return Rule(
        key=key,
        name=alert_name,
        severity=severity,
        target="cluster",
        for_seconds=for_seconds,
        source=f"AlertRule {namespace}/{name}",
        check=check,
    )


def _position_of(text: str, identifier: str) -> int | None:
    match = re.search(rf"(?<![A-Za-z0-9_'\"]){re.escape(identifier)}(?![A-Za-z0-9_])", text)
    return match.start() if match else None
