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
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
DEFAULT_MESSAGE = "AlertRule {rule} fires on cluster {cluster}"


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


def parse_duration(text: Any, field: str = "spec.for") -> float:
    """``30s``, ``5m``, ``1h30m``, ``500ms`` or ``0`` in seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool) and text >= 0:
        return float(text)
    if not isinstance(text, str):
        raise RuleError(field, f"expected a duration such as 30s or 5m, got {text!r}")
    if text.strip() == "0":
        return 0.0
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise RuleError(field, f"expected a duration such as 30s, 5m or 1h30m, got {text!r}")
    return sum(int(number) * _UNITS[unit] for number, unit in parts)


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


def read_selector(raw: Any) -> Selector:
    """``spec.clusterSelector``; errors name the field."""
    if raw is None:
        return Selector()
    if not isinstance(raw, Mapping):
        raise RuleError("spec.clusterSelector", "expected an object")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values()):
        raise RuleError("spec.clusterSelector.matchLabels", "expected a map of strings")
    expressions = []
    for index, item in enumerate(raw.get("matchExpressions") or ()):
        field = f"spec.clusterSelector.matchExpressions[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise RuleError(field, "expected an object with key and operator")
        operator = item.get("operator")
        if operator not in _OPERATORS:
            raise RuleError(f"{field}.operator", f"expected one of {', '.join(_OPERATORS)}, got {operator!r}")
        values = item.get("values") or []
        if operator in ("In", "NotIn") and not values:
            raise RuleError(f"{field}.values", f"operator {operator} needs values")
        expressions.append((item["key"], operator, frozenset(str(v) for v in values)))
    return Selector(dict(labels), tuple(expressions))


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
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise RuleError("spec", "expected an object")
    condition = spec.get("condition")
    if not isinstance(condition, str) or not condition.strip():
        raise RuleError("spec.condition", "required: an expression such as pods_running > 100")
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
    if severity not in SEVERITIES:
        raise RuleError("spec.severity", f"expected one of {', '.join(SEVERITIES)}, got {severity!r}")
    for_seconds = parse_duration(spec.get("for", "0s"))
    message = spec.get("message") or DEFAULT_MESSAGE
    alert_name = spec.get("alertName") or name
    if not isinstance(message, str) or not isinstance(alert_name, str):
        raise RuleError("spec.message" if not isinstance(message, str) else "spec.alertName", "expected a string")
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
