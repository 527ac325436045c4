"""The alert rule contract: what a rule sees and what it returns.

Rules are contributed through ``clusterpulse_register_alert_rules``; the alerts plugin
evaluates them against the state every reconcile stores. A rule is a function
``evaluate(view, threshold)`` that receives a read-only view of one cluster
(:class:`ClusterView`) or one registry (:class:`RegistryView`) and returns the objects the
rule fires on, as :class:`Finding`\\ s, or ``None`` when the view lacks what the rule needs
(then the rule's current alerts are kept as they are, neither fired nor resolved).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import attrs

from clusterpulse_model import (
    ClusterMetrics,
    ClusterOperatorInfo,
    ClusterStatusRecord,
    NodeMetrics,
    OperatorInfo,
    RegistryStatusRecord,
)

#: What a rule looks at: each cluster, or each registry.
Target = Literal["cluster", "registry"]


@attrs.frozen
class Finding:
    """One object a rule fires on. Same rule + same object = same alert id."""

    resource_type: str
    resource_name: str
    message: str
    namespace: str = ""


@attrs.frozen
class ClusterView:
    """What the alerts plugin last saw stored for one cluster (``None``: not seen since start)."""

    name: str
    labels: Mapping[str, str] = attrs.field(factory=dict)
    status: ClusterStatusRecord | None = None
    nodes: tuple[NodeMetrics, ...] | None = None
    metrics: ClusterMetrics | None = None
    operators: tuple[OperatorInfo, ...] | None = None
    cluster_operators: tuple[ClusterOperatorInfo, ...] | None = None
    #: MetricSource id (``<ns>/<name>``) -> its aggregation values on this cluster.
    aggregations: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    #: MetricSource id -> the error of its last collection from this cluster (absent: it worked).
    metricsource_failures: Mapping[str, str] = attrs.field(factory=dict)
    #: MetricSource ids whose last run reached this cluster (with or without success).
    metricsources_seen: frozenset[str] = frozenset()


@attrs.frozen
class RegistryView:
    """What the alerts plugin last saw stored for one registry."""

    name: str
    status: RegistryStatusRecord | None = None


#: ``evaluate(view, threshold)``: findings, or ``None`` for "cannot tell".
RuleFunction = Callable[[Any, "float | None"], "Iterable[Finding] | None"]


@attrs.frozen
class AlertRuleDef:
    """A registered rule, as the alerts plugin sees the ``register(name, evaluate, **meta)`` call.

    ``name`` is the alert name (``NodeNotReady``); ``for_seconds`` how long the condition
    must hold before the alert fires; ``threshold`` the default of the rule's tunable number
    (``None``: the rule has none).
    """

    name: str
    evaluate: RuleFunction
    severity: str = "warning"
    target: Target = "cluster"
    for_seconds: float = 60.0
    threshold: float | None = None
    summary: str = ""
    plugin: str = ""

    @classmethod
    def from_registration(cls, name: str, impl: Any, plugin: str, meta: Mapping[str, Any]) -> AlertRuleDef:
        """Build from a contribution; unknown meta keys or bad values raise ``ValueError`` naming them."""
        allowed = {"severity", "target", "for_seconds", "threshold", "summary"}
        unknown = sorted(set(meta) - allowed)
        if unknown:
            raise ValueError(f"alert rule {name!r}: unknown option(s) {', '.join(unknown)}")
        if not callable(impl):
            raise ValueError(f"alert rule {name!r}: evaluate must be callable")
        severity = str(meta.get("severity", "warning"))
        if severity not in ("critical", "warning", "info"):
            raise ValueError(f"alert rule {name!r}: severity must be critical, warning or info, got {severity!r}")
        target = meta.get("target", "cluster")
        if target not in ("cluster", "registry"):
            raise ValueError(f"alert rule {name!r}: target must be cluster or registry, got {target!r}")
        threshold = meta.get("threshold")
        return cls(
            name=name,
            evaluate=impl,
            severity=severity,
            target=target,
            for_seconds=float(meta.get("for_seconds", 60.0)),
            threshold=None if threshold is None else float(threshold),
            summary=str(meta.get("summary", "")),
            plugin=plugin,
        )
