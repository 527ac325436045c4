"""The series of each kind of state (docs/compatibility.md#victoriametrics), as text lines.

Every function here is pure: domain objects plus a millisecond timestamp in, lines out, in
the Go writer's order (docs/compatibility.md#victoriametrics). ``extra`` label pairs (the configured
``extra_labels``) follow the
built-in labels of every series.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from clusterpulse_model import Alert, ClusterMetrics, ClusterOperatorInfo, NodeMetrics, OperatorInfo

from clusterpulse_vmwriter.text import (
    LabelPairs,
    float_text,
    render_labels,
    sample_line,
    sanitize_metric_name,
)

#: (metric, attribute, value type) of one cluster-metrics write, in line order.
CLUSTER_SERIES: tuple[tuple[str, str, type], ...] = (
    ("clusterpulse_cluster_nodes_total", "nodes", int),
    ("clusterpulse_cluster_nodes_ready", "nodes_ready", int),
    ("clusterpulse_cluster_pods_total", "pods", int),
    ("clusterpulse_cluster_pods_running", "pods_running", int),
    ("clusterpulse_cluster_cpu_capacity", "cpu_capacity", float),
    ("clusterpulse_cluster_memory_capacity_bytes", "memory_capacity", int),
    ("clusterpulse_cluster_namespaces_total", "namespaces", int),
    ("clusterpulse_cluster_deployments_total", "deployments", int),
)

#: (metric, attribute, value type) of one node, in line order (17 lines per node).
NODE_SERIES: tuple[tuple[str, str, type], ...] = (
    ("clusterpulse_node_cpu_usage_percent", "cpu_usage_percent", float),
    ("clusterpulse_node_memory_usage_percent", "memory_usage_percent", float),
    ("clusterpulse_node_pods_total", "pods_total", int),
    ("clusterpulse_node_pods_running", "pods_running", int),
    ("clusterpulse_node_cpu_capacity", "cpu_capacity", float),
    ("clusterpulse_node_memory_capacity_bytes", "memory_capacity", int),
    ("clusterpulse_node_storage_capacity_bytes", "storage_capacity", int),
    ("clusterpulse_node_pods_capacity", "pods_capacity", int),
    ("clusterpulse_node_cpu_allocatable", "cpu_allocatable", float),
    ("clusterpulse_node_memory_allocatable_bytes", "memory_allocatable", int),
    ("clusterpulse_node_storage_allocatable_bytes", "storage_allocatable", int),
    ("clusterpulse_node_pods_allocatable", "pods_allocatable", int),
    ("clusterpulse_node_cpu_requested", "cpu_requested", float),
    ("clusterpulse_node_memory_requested_bytes", "memory_requested", int),
    ("clusterpulse_node_pods_pending", "pods_pending", int),
    ("clusterpulse_node_pods_failed", "pods_failed", int),
    ("clusterpulse_node_pods_succeeded", "pods_succeeded", int),
)

#: (metric, ClusterOperatorInfo flag) of one ClusterOperator, in line order.
CLUSTER_OPERATOR_SERIES: tuple[tuple[str, str], ...] = (
    ("clusterpulse_cluster_operator_available", "available"),
    ("clusterpulse_cluster_operator_progressing", "progressing"),
    ("clusterpulse_cluster_operator_degraded", "degraded"),
    ("clusterpulse_cluster_operator_upgradeable", "upgradeable"),
)

CUSTOM_RESOURCE_PREFIX = "clusterpulse_custom_resource_"
#: Label naming the group of a grouped (``groupBy``) aggregation result.
GROUP_LABEL = "group"
#: Label names the writer sets itself; ``extra_labels`` may not reuse them.
BUILTIN_LABELS = frozenset(
    {"cluster", "node", "operator", "source", GROUP_LABEL, "alert", "severity", "resource", "namespace", "name"}
)
ALERT_METRIC = "clusterpulse_alert_firing"


def _int_text(value: Any) -> str:
    return str(int(value))


def _float_text(value: Any) -> str:
    return float_text(float(value))


def _compile(
    series: tuple[tuple[str, str, type], ...],
) -> tuple[Callable[[Any], tuple[Any, ...]], tuple[tuple[str, Callable[[Any], str]], ...]]:
    """A getter of every value of a table and (metric, text of its declared type) per line.

    Int columns are printed as integers even when a float slipped in (never ``1e+06`` for a
    count); float columns as Go's %v. Rendering 17 lines per node is the writer's hot path.
    """
    getter = operator.attrgetter(*(attr for _, attr, _ in series))
    return getter, tuple((metric, _int_text if kind is int else _float_text) for metric, _, kind in series)


_CLUSTER_VALUES, _CLUSTER_FORMS = _compile(CLUSTER_SERIES)
_NODE_VALUES, _NODE_FORMS = _compile(NODE_SERIES)


def cluster_lines(cluster: str, metrics: ClusterMetrics, ts_ms: int, extra: LabelPairs = ()) -> list[str]:
    """The 8 cluster gauges of one ClusterMetrics, in table order."""
    labels = render_labels([("cluster", cluster), *extra])
    return [
        f"{metric}{labels} {text(value)} {ts_ms}"
        for (metric, text), value in zip(_CLUSTER_FORMS, _CLUSTER_VALUES(metrics), strict=True)
    ]


def node_lines(cluster: str, node: NodeMetrics, ts_ms: int, extra: LabelPairs = ()) -> list[str]:
    """The 17 per-node gauges of one node, in table order."""
    labels = render_labels([("cluster", cluster), ("node", node.name), *extra])
    return [
        f"{metric}{labels} {text(value)} {ts_ms}"
        for (metric, text), value in zip(_NODE_FORMS, _NODE_VALUES(node), strict=True)
    ]


def operator_lines(
    cluster: str,
    operators: Sequence[OperatorInfo] | None,
    cluster_operators: Sequence[ClusterOperatorInfo] | None,
    ts_ms: int,
    extra: LabelPairs = (),
) -> list[str]:
    """One operator write: presence per OLM operator, 4 flags per ClusterOperator, then the totals.

    ``None`` means that kind was not collected in this write, so neither its lines nor its
    total are written (an operator scan runs less often than the ClusterOperator check; a
    missing scan must not read as "0 operators").
    """
    extra = tuple(extra)
    lines: list[str] = []
    for olm_operator in operators or ():
        labels = render_labels([("cluster", cluster), ("operator", olm_operator.name), *extra])
        lines.append(sample_line("clusterpulse_operator_installed", labels, "1", ts_ms))
    for info in cluster_operators or ():
        labels = render_labels([("cluster", cluster), ("operator", info.name), *extra])
        lines.extend(
            sample_line(metric, labels, "1" if getattr(info, flag) else "0", ts_ms)
            for metric, flag in CLUSTER_OPERATOR_SERIES
        )
    cluster_labels = render_labels([("cluster", cluster), *extra])
    if operators is not None:
        lines.append(sample_line("clusterpulse_cluster_operators_total", cluster_labels, str(len(operators)), ts_ms))
    if cluster_operators is not None:
        lines.append(
            sample_line("clusterpulse_cluster_operators_count", cluster_labels, str(len(cluster_operators)), ts_ms)
        )
    return lines


def custom_resource_metric(aggregation: str) -> str:
    """``clusterpulse_custom_resource_<aggregation>`` with the name sanitised (C11)."""
    return sanitize_metric_name(CUSTOM_RESOURCE_PREFIX + aggregation)


def custom_resource_line(
    aggregation: str, cluster: str, source_id: str, value: float, ts_ms: int, extra: LabelPairs = ()
) -> str:
    """One aggregation value: ``clusterpulse_custom_resource_<name>{cluster,source}`` as a float."""
    labels = render_labels([("cluster", cluster), ("source", source_id), *extra])
    return sample_line(custom_resource_metric(aggregation), labels, float_text(float(value)), ts_ms)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)


def custom_resource_lines(
    aggregation: str, cluster: str, source_id: str, value: Any, ts_ms: int, extra: LabelPairs = ()
) -> list[str]:
    """The lines of one aggregation result of any shape.

    A number (bools as 0/1) is one series; a grouped result (a mapping of group key to
    number) is one series per group with an extra ``group="<key>"`` label; anything else
    (``None``, strings, lists, non-numeric group values) has no time series and is skipped.
    """
    if _is_number(value):
        return [custom_resource_line(aggregation, cluster, source_id, value, ts_ms, extra)]
    if not isinstance(value, Mapping):
        return []
    extra = tuple(extra)
    return [
        custom_resource_line(aggregation, cluster, source_id, group_value, ts_ms, ((GROUP_LABEL, str(group)), *extra))
        for group, group_value in value.items()
        if _is_number(group_value)
    ]


def record_metric(kind: str, number: str) -> str:
    """``clusterpulse_<kind>_<number>`` (kind lower-cased) for a generic record's number."""
    return sanitize_metric_name(f"clusterpulse_{kind.lower()}_{number}")


def record_lines(
    kind: str, namespace: str, name: str, numbers: Mapping[str, Any], ts_ms: int, extra: LabelPairs = ()
) -> list[str]:
    """One gauge per number of a generic record, labelled ``namespace`` and ``name``, sorted by number name.

    Non-finite numbers have no sample and are skipped.
    """
    labels = render_labels([("namespace", namespace), ("name", name), *extra])
    lines = []
    for number, value in sorted(numbers.items()):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            continue
        lines.append(sample_line(record_metric(kind, number), labels, float_text(float(value)), ts_ms))
    return lines


def alert_line(cluster: str, alert: Alert, firing: bool, ts_ms: int, extra: LabelPairs = ()) -> str:
    """``clusterpulse_alert_firing{cluster,alert,severity,resource}``: 1 while firing, 0 once resolved.

    ``resource`` (``<namespace>/<name>`` or ``<name>``) keeps two objects' alerts of one rule
    apart, so resolving one does not zero the other.
    """
    resource = f"{alert.namespace}/{alert.resource_name}" if alert.namespace else alert.resource_name
    labels = render_labels(
        [("cluster", cluster), ("alert", alert.name), ("severity", alert.severity), ("resource", resource), *extra]
    )
    return sample_line(ALERT_METRIC, labels, "1" if firing else "0", ts_ms)
