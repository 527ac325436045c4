"""The built-in rules, registered through ``clusterpulse_register_alert_rules`` like any plugin's.

Each function reads one view and returns findings, or ``None`` when the view lacks the data
(not collected since start). They run after every reconcile, so each is one pass over data
already in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from clusterpulse_model import Health, NodeMetrics, NodeStatus, is_health_verdict
from clusterpulse_model.alerting import ClusterView, Finding, RegistryView

from clusterpulse_core.hookspecs import Register

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

ClusterRule = Callable[[ClusterView, "float | None"], "list[Finding] | None"]


def cluster_unreachable(view: ClusterView, threshold: float | None) -> list[Finding] | None:
    """The last reconcile could not reach the cluster (status ``unhealthy`` with its error).

    A reached cluster that is ``unhealthy`` by its nodes (docs/readers.md#r7-health) is not
    unreachable: the NodeNotReady alerts say what is wrong with it.
    """
    if view.status is None:
        return None
    if view.status.health != Health.UNHEALTHY.value or is_health_verdict(view.status.message):
        return []
    return [Finding("cluster", view.name, f"cluster {view.name} is unreachable: {view.status.message}")]


def _not_ready(node: NodeMetrics) -> bool:
    for condition in node.conditions:
        if condition.type == "Ready":
            return condition.status != "True"
    return node.status in (NodeStatus.NOT_READY.value, NodeStatus.UNKNOWN.value)


def node_not_ready(view: ClusterView, threshold: float | None) -> list[Finding] | None:
    """Nodes whose ``Ready`` condition is not ``True``."""
    if view.nodes is None:
        return None
    return [Finding("node", node.name, f"node {node.name} is not ready") for node in view.nodes if _not_ready(node)]


def _pressure(condition_type: str, what: str) -> ClusterRule:
    def rule(view: ClusterView, threshold: float | None) -> list[Finding] | None:
        if view.nodes is None:
            return None
        return [
            Finding("node", node.name, f"node {node.name} has {what} pressure")
            for node in view.nodes
            if any(c.type == condition_type and c.status == "True" for c in node.conditions)
        ]

    rule.__doc__ = f"Nodes whose ``{condition_type}`` condition is ``True``."
    return rule


node_memory_pressure = _pressure("MemoryPressure", "memory")
node_disk_pressure = _pressure("DiskPressure", "disk")
node_pid_pressure = _pressure("PIDPressure", "PID")


def node_unschedulable(view: ClusterView, threshold: float | None) -> list[Finding] | None:
    """Cordoned nodes (``spec.unschedulable`` or the unschedulable taint)."""
    if view.nodes is None:
        return None
    return [
        Finding("node", node.name, f"node {node.name} is cordoned (scheduling disabled)")
        for node in view.nodes
        if node.status == NodeStatus.SCHEDULING_DISABLED.value or any(t.key == UNSCHEDULABLE_TAINT for t in node.taints)
    ]


def cluster_operator_down(view: ClusterView, threshold: float | None) -> list[Finding] | None:
    """OpenShift ClusterOperators that are not ``Available`` or are ``Degraded``."""
    if view.cluster_operators is None:
        return None
    found = []
    for op in view.cluster_operators:
        if op.available and not op.degraded:
            continue
        state = " and ".join(s for s, bad in (("unavailable", not op.available), ("degraded", op.degraded)) if bad)
        detail = f": {op.message}" if op.message else ""
        found.append(Finding("clusteroperator", op.name, f"ClusterOperator {op.name} is {state}{detail}"))
    return found


def operator_failed(view: ClusterView, threshold: float | None) -> list[Finding] | None:
    """OLM operators whose ClusterServiceVersion phase is ``Failed``."""
    if view.operators is None:
        return None
    return [
        Finding("operator", op.name, f"operator {op.name} is in phase Failed", op.installed_namespace)
        for op in view.operators
        if op.status == "Failed"
    ]


def _requests(view: ClusterView) -> Iterator[tuple[str, float, float]]:
    assert view.nodes is not None
    cpu_requested = cpu_allocatable = 0.0
    memory_requested = memory_allocatable = 0
    for node in view.nodes:
        cpu_requested += node.cpu_requested
        cpu_allocatable += node.cpu_allocatable
        memory_requested += node.memory_requested
        memory_allocatable += node.memory_allocatable
    yield "CPU", cpu_requested, cpu_allocatable
    yield "memory", float(memory_requested), float(memory_allocatable)


def _requests_rule(resource: str) -> ClusterRule:
    def rule(view: ClusterView, threshold: float | None) -> list[Finding] | None:
        if view.nodes is None:
            return None
        limit = 90.0 if threshold is None else threshold
        for name, requested, allocatable in _requests(view):
            if name != resource:
                continue
            if allocatable <= 0:
                return []
            percent = requested / allocatable * 100.0
            if percent > limit:
                return [
                    Finding(
                        "cluster",
                        view.name,
                        f"{name} requests are {percent:.1f}% of allocatable on cluster {view.name} (limit {limit:g}%)",
                    )
                ]
        return []

    rule.__doc__ = f"Cluster {resource} requests above ``threshold`` percent of allocatable."
    return rule


cpu_requests_high = _requests_rule("CPU")
memory_requests_high = _requests_rule("memory")


def registry_unavailable(view: RegistryView, threshold: float | None) -> list[Finding] | None:
    """The registry's last health check failed."""
    if view.status is None:
        return None
    if view.status.available:
        return []
    detail = f": {view.status.error}" if view.status.error else ""
    return [Finding("registry", view.name, f"registry {view.name} is unavailable{detail}")]


def registry_degraded(view: RegistryView, threshold: float | None) -> list[Finding] | None:
    """The registry answered, slower than ``threshold`` milliseconds."""
    if view.status is None:
        return None
    limit = 5000.0 if threshold is None else threshold
    if not view.status.available or view.status.response_time <= limit:
        return []
    return [
        Finding(
            "registry",
            view.name,
            f"registry {view.name} is degraded: answered in {view.status.response_time} ms (limit {limit:g} ms)",
        )
    ]


def metricsource_failing(view: ClusterView, threshold: float | None) -> list[Finding] | None:
    """MetricSources whose last collection from this cluster failed."""
    found = []
    for source_id, error in sorted(view.metricsource_failures.items()):
        namespace, _, name = source_id.partition("/")
        found.append(
            Finding(
                "metricsource",
                name,
                f"MetricSource {source_id} cannot collect from cluster {view.name}: {error}",
                namespace,
            )
        )
    return found


def register_builtin_rules(register: Register) -> None:
    """Every built-in rule with its severity, default ``for`` and threshold."""
    register(
        "ClusterUnreachable",
        cluster_unreachable,
        severity="critical",
        for_seconds=60.0,
        summary="the cluster cannot be reached",
    )
    register(
        "NodeNotReady",
        node_not_ready,
        severity="critical",
        for_seconds=60.0,
        summary="a node's Ready condition is not True",
    )
    register(
        "NodeMemoryPressure",
        node_memory_pressure,
        severity="warning",
        for_seconds=60.0,
        summary="a node reports MemoryPressure",
    )
    register(
        "NodeDiskPressure",
        node_disk_pressure,
        severity="warning",
        for_seconds=60.0,
        summary="a node reports DiskPressure",
    )
    register(
        "NodePIDPressure", node_pid_pressure, severity="warning", for_seconds=60.0, summary="a node reports PIDPressure"
    )
    register("NodeUnschedulable", node_unschedulable, severity="info", for_seconds=0.0, summary="a node is cordoned")
    register(
        "ClusterOperatorDown",
        cluster_operator_down,
        severity="critical",
        for_seconds=60.0,
        summary="an OpenShift ClusterOperator is unavailable or degraded",
    )
    register(
        "OperatorFailed",
        operator_failed,
        severity="warning",
        for_seconds=60.0,
        summary="an OLM operator's CSV is in phase Failed",
    )
    register(
        "ClusterCPURequestsHigh",
        cpu_requests_high,
        severity="warning",
        for_seconds=300.0,
        threshold=90.0,
        summary="CPU requests above threshold % of allocatable",
    )
    register(
        "ClusterMemoryRequestsHigh",
        memory_requests_high,
        severity="warning",
        for_seconds=300.0,
        threshold=90.0,
        summary="memory requests above threshold % of allocatable",
    )
    register(
        "RegistryUnavailable",
        registry_unavailable,
        severity="critical",
        target="registry",
        for_seconds=60.0,
        summary="a registry's health check fails",
    )
    register(
        "RegistryDegraded",
        registry_degraded,
        severity="warning",
        target="registry",
        for_seconds=60.0,
        threshold=5000.0,
        summary="a registry answers slower than threshold ms",
    )
    register(
        "MetricSourceCollectionFailing",
        metricsource_failing,
        severity="warning",
        for_seconds=60.0,
        summary="a MetricSource cannot collect from a cluster",
    )
