"""Cluster-level records: the stored spec, status and aggregate metrics."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

import attrs

from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.serde import wire
from clusterpulse_model.node import NodeMetrics, NodeStatus


class Health(StrEnum):
    """Health of a cluster or registry."""

    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNHEALTHY = "unhealthy"
    UNKNOWN = "unknown"


@attrs.frozen
class CredentialsRef:
    """Reference to the Secret holding a cluster's credentials."""

    name: str = ""
    namespace: str = ""


@attrs.frozen
class MonitoringRecord:
    """``spec.monitoring`` of a ClusterConnection as stored (0 when unset)."""

    interval: int = 0
    timeout: int = 0


@wire(case="camel")
@attrs.frozen
class ClusterSpecRecord:
    """``cluster:<c>:spec`` (docs/compatibility.md#redis-keys): camelCase on the wire."""

    display_name: str = ""
    endpoint: str = ""
    credentials_ref: CredentialsRef = CredentialsRef()
    labels: dict[str, str] = attrs.field(factory=dict)
    monitoring: MonitoringRecord = MonitoringRecord()


@wire(omit_empty=("last_heartbeat",))
@attrs.frozen
class AgentStatus:
    """A push-mode cluster's collector agent: installed by the hub, its image tag, connected or not."""

    deployed: bool = False
    version: str = ""
    connected: bool = False
    last_heartbeat: datetime | None = None


@wire(omit_empty=("agent",))
@attrs.frozen
class ClusterStatusRecord:
    """``cluster:<c>:status`` (docs/compatibility.md#redis-keys); ``agent`` only for push-mode clusters (an
    addition)."""

    health: str = Health.UNKNOWN.value
    message: str = ""
    last_check: datetime = ZERO_TIME
    agent: AgentStatus | None = None


@attrs.frozen
class ClusterMetrics:
    """Cluster totals: the 24 fields of docs/compatibility.md#r1 plus ``namespace_list`` (stored separately).

    Pull mode and push batches both build it with :func:`cluster_metrics`, so the stored
    totals mean the same whichever way a cluster is collected.
    """

    timestamp: datetime = ZERO_TIME
    nodes: int = 0
    nodes_ready: int = 0
    namespaces: int = 0
    namespace_list: tuple[str, ...] = ()
    pods: int = 0
    pods_running: int = 0
    cpu_capacity: float = 0.0
    memory_capacity: int = 0
    deployments: int = 0
    nodes_not_ready: int = 0
    pods_pending: int = 0
    pods_failed: int = 0
    cpu_allocatable: float = 0.0
    cpu_requested: float = 0.0
    cpu_usage_percent: float = 0.0
    memory_allocatable: int = 0
    memory_requested: int = 0
    memory_usage_percent: float = 0.0
    storage_capacity: int = 0
    storage_used: int = 0
    pvcs: int = 0
    services: int = 0
    statefulsets: int = 0
    daemonsets: int = 0
    #: Cordoned nodes (status ``SchedulingDisabled``) not known to be not Ready: counted in
    #: ``nodes_not_ready`` (R1, as upstream) but not by the health (docs/compatibility.md#r8). Not stored.
    nodes_cordoned: int = 0

    @property
    def nodes_unready(self) -> int:
        """Nodes whose Ready condition is not True, what the health counts (docs/compatibility.md#r8)."""
        return max(0, self.nodes_not_ready - self.nodes_cordoned)


def cordoned_ready(node: NodeMetrics) -> bool:
    """A cordoned node not known to be not Ready: its Ready condition is True, or its conditions are
    unknown (a Go agent's batch carries the status alone; docs/compatibility.md#r8)."""
    if node.status != NodeStatus.SCHEDULING_DISABLED.value:
        return False
    ready = [c.status for c in node.conditions if c.type == "Ready"]
    return not node.conditions or (bool(ready) and ready[-1] == "True")


@attrs.frozen
class PodPhaseCounts:
    """Pods of a whole cluster by phase (bound to a node or not)."""

    total: int = 0
    running: int = 0
    pending: int = 0
    failed: int = 0


@attrs.frozen
class ObjectCounts:
    """Cluster-wide object counts; a count that could not be listed is 0 (docs/compatibility.md#r1)."""

    deployments: int = 0
    services: int = 0
    statefulsets: int = 0
    daemonsets: int = 0
    pvcs: int = 0


def usage_percent(part: float, whole: float) -> float:
    """``part / whole * 100``, 0 when ``whole`` is not positive (requests, not live usage)."""
    return part / whole * 100 if whole > 0 else 0.0


def cluster_metrics(
    nodes: Sequence[NodeMetrics],
    namespaces: Sequence[str],
    now: datetime,
    pods: PodPhaseCounts | None = None,
    counts: ObjectCounts = ObjectCounts(),
) -> ClusterMetrics:
    """The R1 totals of one collection.

    Node fields are summed over ``nodes``; ``nodes_not_ready`` counts every node whose status
    is not ``Ready``. ``pods`` are the cluster's pods by phase; without them (a producer that
    only saw nodes) the node tallies are summed instead, which leaves out unbound pods.
    """
    if pods is None:
        pods = PodPhaseCounts(
            total=sum(node.pods_total for node in nodes),
            running=sum(node.pods_running for node in nodes),
            pending=sum(node.pods_pending for node in nodes),
            failed=sum(node.pods_failed for node in nodes),
        )
    ready = sum(1 for node in nodes if node.status == NodeStatus.READY.value)
    cpu_allocatable = sum((node.cpu_allocatable for node in nodes), 0.0)
    cpu_requested = sum((node.cpu_requested for node in nodes), 0.0)
    memory_allocatable = sum(node.memory_allocatable for node in nodes)
    memory_requested = sum(node.memory_requested for node in nodes)
    return ClusterMetrics(
        timestamp=now,
        nodes=len(nodes),
        nodes_ready=ready,
        nodes_not_ready=len(nodes) - ready,
        namespaces=len(namespaces),
        namespace_list=tuple(namespaces),
        pods=pods.total,
        pods_running=pods.running,
        pods_pending=pods.pending,
        pods_failed=pods.failed,
        cpu_capacity=sum((node.cpu_capacity for node in nodes), 0.0),
        cpu_allocatable=cpu_allocatable,
        cpu_requested=cpu_requested,
        cpu_usage_percent=usage_percent(cpu_requested, cpu_allocatable),
        memory_capacity=sum(node.memory_capacity for node in nodes),
        memory_allocatable=memory_allocatable,
        memory_requested=memory_requested,
        memory_usage_percent=usage_percent(memory_requested, memory_allocatable),
        storage_capacity=sum(node.storage_capacity for node in nodes),
        deployments=counts.deployments,
        services=counts.services,
        statefulsets=counts.statefulsets,
        daemonsets=counts.daemonsets,
        pvcs=counts.pvcs,
        nodes_cordoned=sum(1 for node in nodes if cordoned_ready(node)),
    )


#: The message of a cluster without issues (docs/readers.md#r7-health).
HEALTHY_MESSAGE = "Cluster is healthy"
#: How the message of a reachable cluster with issues starts.
ISSUES_PREFIX = "Issues: "


def is_health_verdict(message: str) -> bool:
    """Whether a status message is a reachable cluster's health verdict (not a reconcile error)."""
    return message == HEALTHY_MESSAGE or message.startswith(ISSUES_PREFIX)


@attrs.frozen
class HealthThresholds:
    """When a reachable cluster is degraded or unhealthy (docs/readers.md#r7-health).

    Fractions of nodes for ``node_unhealthy``; percentages of allocatable CPU or memory
    requested for the others. The defaults are the upstream ones.
    """

    node_unhealthy: float = 0.5
    cpu_critical: float = 90.0
    memory_critical: float = 90.0
    cpu_warning: float = 85.0
    memory_warning: float = 85.0


@attrs.frozen
class HealthVerdict:
    """A reachable cluster's health and its reason, as stored in its status."""

    health: str
    message: str


def cluster_health(metrics: ClusterMetrics, thresholds: HealthThresholds = HealthThresholds()) -> HealthVerdict:
    """The health of a reachable cluster from its totals, as the Go controller at upstream 73eb0ca.

    ``degraded`` when any node is not Ready, ``unhealthy`` when at least ``node_unhealthy`` of
    the nodes are not (a cordoned node whose Ready condition is True is not "not ready",
    docs/compatibility.md#r8); ``degraded`` (if not worse) when requested CPU or memory is above its
    critical percentage. The message names the first issue: not-ready nodes, then CPU, then
    memory above its warning percentage (which alone does not change the health).
    """
    health = Health.HEALTHY
    issues: list[str] = []
    not_ready = metrics.nodes_unready
    if not_ready > 0:
        share = not_ready / metrics.nodes if metrics.nodes > 0 else 1.0
        health = Health.UNHEALTHY if share >= thresholds.node_unhealthy else Health.DEGRADED
        issues.append(f"{not_ready} nodes not ready")
    for label, percent, critical, warning in (
        ("CPU", metrics.cpu_usage_percent, thresholds.cpu_critical, thresholds.cpu_warning),
        ("memory", metrics.memory_usage_percent, thresholds.memory_critical, thresholds.memory_warning),
    ):
        if percent > critical and health is Health.HEALTHY:
            health = Health.DEGRADED
        if percent > min(critical, warning):
            issues.append(f"High {label} usage: {percent:.2f}%")
    return HealthVerdict(health.value, ISSUES_PREFIX + issues[0] if issues else HEALTHY_MESSAGE)
