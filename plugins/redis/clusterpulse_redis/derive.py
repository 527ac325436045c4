"""Building the stored shapes (and the values docs/compatibility.md#redis-keys, #r3 derive) from domain objects."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import attrs
from clusterpulse_model import (
    ClusterMetrics,
    ClusterOperatorInfo,
    CustomResourceCollection,
    NodeMetrics,
    NodeStatus,
    OperatorInfo,
)
from clusterpulse_model.pieces import ResourceCollection

from clusterpulse_core.serde import dumps
from clusterpulse_redis.keys import OPERATOR_NAMESPACES_SHOWN
from clusterpulse_redis.stored import (
    ClusterOperatorsSummary,
    ClusterOperatorState,
    CustomResourceMeta,
    InstallModeCounts,
    NodeHashFields,
    NodeSample,
    NodesSummary,
    OperatorsSummary,
    ResourceMetadata,
    StoredClusterMetrics,
    StoredOperator,
)

# ---------------------------------------------------------------------------- cluster


def cluster_metrics(metrics: ClusterMetrics) -> StoredClusterMetrics:
    """The 24 stored totals of docs/compatibility.md#r1 (the namespace list is stored under its own key)."""
    return StoredClusterMetrics(
        timestamp=metrics.timestamp,
        nodes=metrics.nodes,
        nodes_ready=metrics.nodes_ready,
        nodes_not_ready=metrics.nodes_not_ready,
        namespaces=metrics.namespaces,
        pods=metrics.pods,
        pods_running=metrics.pods_running,
        pods_pending=metrics.pods_pending,
        pods_failed=metrics.pods_failed,
        cpu_capacity=metrics.cpu_capacity,
        cpu_allocatable=metrics.cpu_allocatable,
        cpu_requested=metrics.cpu_requested,
        cpu_usage_percent=metrics.cpu_usage_percent,
        memory_capacity=metrics.memory_capacity,
        memory_allocatable=metrics.memory_allocatable,
        memory_requested=metrics.memory_requested,
        memory_usage_percent=metrics.memory_usage_percent,
        storage_capacity=metrics.storage_capacity,
        storage_used=metrics.storage_used,
        pvcs=metrics.pvcs,
        services=metrics.services,
        deployments=metrics.deployments,
        statefulsets=metrics.statefulsets,
        daemonsets=metrics.daemonsets,
    )


# ---------------------------------------------------------------------------- nodes


def node_current(node: NodeMetrics) -> NodeMetrics:
    """The node as stored in ``current``: roles sorted (docs/compatibility.md#redis-conventions)."""
    roles = tuple(sorted(node.roles))
    return node if roles == node.roles else attrs.evolve(node, roles=roles)


def node_conditions(node: NodeMetrics) -> dict[str, bytes]:
    """The conditions hash (docs/compatibility.md#r2): condition type -> the condition's JSON (last one wins)."""
    return {condition.type: dumps(condition) for condition in node.conditions}


def node_hash_fields(node: NodeMetrics, current_json: bytes, now: datetime) -> NodeHashFields:
    """The node hash: the JSON plus the flat fields of docs/compatibility.md#redis-keys (percentages with two
    decimals)."""
    return NodeHashFields(
        current=current_json,
        last_update=now,
        status=node.status,
        cpu_usage=f"{node.cpu_usage_percent:.2f}",
        memory_usage=f"{node.memory_usage_percent:.2f}",
        pods_total=str(node.pods_total),
    )


def node_sample(node: NodeMetrics) -> NodeSample:
    """The node's time-series member."""
    return NodeSample(
        timestamp=node.timestamp,
        cpu_usage=node.cpu_usage_percent,
        memory_usage=node.memory_usage_percent,
        cpu_requested=node.cpu_requested,
        memory_requested=node.memory_requested,
        pods_running=node.pods_running,
        pods_pending=node.pods_pending,
        pods_total=node.pods_total,
    )


def nodes_summary(nodes: Sequence[NodeMetrics], now: datetime) -> NodesSummary:
    """Counts by status and role, capacity totals and mean usage (docs/compatibility.md#redis-keys; 0 when no nodes)."""
    statuses = Counter(node.status for node in nodes)
    by_role: Counter[str] = Counter(role for node in nodes for role in node.roles)
    count = len(nodes)
    return NodesSummary(
        total=count,
        ready=statuses[NodeStatus.READY.value],
        not_ready=statuses[NodeStatus.NOT_READY.value],
        scheduling_disabled=statuses[NodeStatus.SCHEDULING_DISABLED.value],
        by_role=dict(by_role),
        total_cpu_capacity=float(sum(node.cpu_capacity for node in nodes)),
        total_memory_capacity=sum(node.memory_capacity for node in nodes),
        avg_cpu_usage=sum(node.cpu_usage_percent for node in nodes) / count if count else 0.0,
        avg_memory_usage=sum(node.memory_usage_percent for node in nodes) / count if count else 0.0,
        timestamp=now,
    )


# ---------------------------------------------------------------------------- OLM operators


def stored_operator(op: OperatorInfo) -> StoredOperator:
    """One operator as stored: target namespaces truncated to 20, with count and detail text.

    ``op.available_in_namespaces`` is the full list; an ``available_count`` larger than it
    (a producer that truncated already) is kept.
    """
    full = op.available_in_namespaces
    count = max(len(full), op.available_count)
    if op.is_cluster_wide or full == ("*",):
        detail = "All namespaces"
    elif count > OPERATOR_NAMESPACES_SHOWN:
        detail = f"{count} namespaces (showing first {OPERATOR_NAMESPACES_SHOWN})"
    else:
        detail = ", ".join(full)
    return StoredOperator(
        name=op.name,
        display_name=op.display_name,
        version=op.version,
        status=op.status,
        namespace=op.installed_namespace,
        installed_namespace=op.installed_namespace,
        install_modes=op.install_modes,
        install_mode=op.install_mode,
        provider=op.provider,
        created_at=op.created_at,
        updated_at=op.updated_at,
        is_cluster_wide=op.is_cluster_wide,
        available_in_namespaces=full[:OPERATOR_NAMESPACES_SHOWN],
        available_count=count,
        available_namespaces_detail=detail,
        all_available_namespaces=full if len(full) > OPERATOR_NAMESPACES_SHOWN else (),
    )


def operators_summary(operators: Sequence[OperatorInfo]) -> OperatorsSummary:
    """Counts by status (empty = ``Unknown``), by namespace (namespace-scoped only) and scope
    ."""
    by_status = Counter(op.status or "Unknown" for op in operators)
    by_namespace = Counter(
        op.installed_namespace for op in operators if not op.is_cluster_wide and op.installed_namespace
    )
    cluster_wide = sum(1 for op in operators if op.is_cluster_wide)
    return OperatorsSummary(
        total=len(operators),
        by_status=dict(by_status),
        by_namespace=dict(by_namespace),
        by_install_mode=InstallModeCounts(cluster_wide=cluster_wide, namespace_scoped=len(operators) - cluster_wide),
    )


# ---------------------------------------------------------------------------- ClusterOperators


def cluster_operators_summary(operators: Sequence[ClusterOperatorInfo], now: datetime) -> ClusterOperatorsSummary:
    """Condition counts, health flags and one issue line per degraded/unavailable operator
    ."""
    total = len(operators)
    available = sum(op.available for op in operators)
    degraded = sum(op.degraded for op in operators)
    issues = tuple(
        f"{op.name}: degraded - {op.message}" if op.degraded else f"{op.name}: not available - {op.message}"
        for op in operators
        if op.degraded or not op.available
    )
    return ClusterOperatorsSummary(
        total=total,
        available=available,
        degraded=degraded,
        progressing=sum(op.progressing for op in operators),
        upgradeable=sum(op.upgradeable for op in operators),
        timestamp=now,
        all_healthy=available == total and degraded == 0,
        has_issues=degraded > 0 or available < total,
        issues=issues,
    )


def cluster_operator_state(op: ClusterOperatorInfo, now: datetime) -> ClusterOperatorState:
    """The per-operator key."""
    return ClusterOperatorState(
        available=op.available,
        degraded=op.degraded,
        progressing=op.progressing,
        version=op.version,
        message=op.message,
        timestamp=now,
    )


# ---------------------------------------------------------------------------- collections


def resource_metadata(collection: ResourceCollection) -> ResourceMetadata:
    """``resource_metadata`` (docs/compatibility.md#r3): per-kind counts; ``total_resources`` as collected."""
    return ResourceMetadata(
        timestamp=collection.timestamp,
        collection_time_ms=collection.collection_time_ms,
        truncated=collection.truncated,
        total_resources=collection.total_resources,
        pods_count=len(collection.pods),
        deployments_count=len(collection.deployments),
        services_count=len(collection.services),
        statefulsets_count=len(collection.statefulsets),
        daemonsets_count=len(collection.daemonsets),
    )


def custom_resource_meta(collection: CustomResourceCollection) -> CustomResourceMeta:
    """The per-cluster MetricSource collection meta."""
    return CustomResourceMeta(
        source_id=collection.source_id,
        cluster_name=collection.cluster_name,
        last_collection_time=collection.collected_at,
        duration_ms=collection.duration_ms,
        resource_count=collection.resource_count,
        truncated=collection.truncated,
    )
