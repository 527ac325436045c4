"""Stored shapes that differ from the domain model (docs/compatibility.md#redis-keys).

Each class is one value (or hash) exactly as readers find it in Redis; it is encoded by the
core converter (:func:`clusterpulse_core.serde.dumps` / ``unstructure``), never by hand.
They are built from domain objects in :mod:`clusterpulse_redis.derive`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.serde import wire

# ---------------------------------------------------------------------------- cluster


@attrs.frozen
class ClusterMetaFields:
    """Hash ``cluster:<c>:meta``."""

    last_update: datetime


@attrs.frozen
class StoredClusterMetrics:
    """``cluster:<c>:metrics``: the 24 totals of docs/compatibility.md#r1 (not the nine the Go controller writes today).

    The namespace list is stored under its own key.
    """

    timestamp: datetime
    nodes: int
    nodes_ready: int
    nodes_not_ready: int
    namespaces: int
    pods: int
    pods_running: int
    pods_pending: int
    pods_failed: int
    cpu_capacity: float
    cpu_allocatable: float
    cpu_requested: float
    cpu_usage_percent: float
    memory_capacity: int
    memory_allocatable: int
    memory_requested: int
    memory_usage_percent: float
    storage_capacity: int
    storage_used: int
    pvcs: int
    services: int
    deployments: int
    statefulsets: int
    daemonsets: int


@attrs.frozen
class StoredNamespaces:
    """``cluster:<c>:namespaces``."""

    namespaces: tuple[str, ...]
    count: int
    timestamp: datetime


@attrs.frozen
class ClusterEvent:
    """One message of channel ``cluster-events`` and list ``events:<name>``."""

    type: str
    cluster: str
    timestamp: datetime
    data: dict[str, Any] | None = None


# ---------------------------------------------------------------------------- nodes


@attrs.frozen
class NodeHashFields:
    """Hash ``cluster:<c>:node:<node>``; ``current`` holds the node JSON, as encoded (UTF-8)."""

    current: bytes
    last_update: datetime
    status: str
    cpu_usage: str
    memory_usage: str
    pods_total: str


@attrs.frozen
class NodeSample:
    """Member of ``cluster:<c>:node:<node>:metrics``."""

    timestamp: datetime
    cpu_usage: float
    memory_usage: float
    cpu_requested: float
    memory_requested: int
    pods_running: int
    pods_pending: int
    pods_total: int


@attrs.frozen
class NodesSummary:
    """Field ``data`` of hash ``cluster:<c>:nodes:summary``."""

    total: int
    ready: int
    not_ready: int
    scheduling_disabled: int
    by_role: dict[str, int]
    total_cpu_capacity: float
    total_memory_capacity: int
    avg_cpu_usage: float
    avg_memory_usage: float
    timestamp: datetime


# ---------------------------------------------------------------------------- operators


@wire(omit_empty=("all_available_namespaces",))
@attrs.frozen
class StoredOperator:
    """One item of ``cluster:<c>:operators``."""

    name: str
    display_name: str
    version: str
    status: str
    namespace: str
    installed_namespace: str
    install_modes: tuple[str, ...]
    install_mode: str
    provider: str
    created_at: datetime
    updated_at: datetime
    is_cluster_wide: bool
    available_in_namespaces: tuple[str, ...]
    available_count: int
    available_namespaces_detail: str
    all_available_namespaces: tuple[str, ...] = ()


@attrs.frozen
class InstallModeCounts:
    """``by_install_mode`` of the operators summary."""

    cluster_wide: int
    namespace_scoped: int


@attrs.frozen
class OperatorsSummary:
    """``cluster:<c>:operators_summary``."""

    total: int
    by_status: dict[str, int]
    by_namespace: dict[str, int]
    by_install_mode: InstallModeCounts


@wire(omit_empty=("issues",))
@attrs.frozen
class ClusterOperatorsSummary:
    """``cluster:<c>:cluster_operators_summary``; ``issues`` only when non-empty."""

    total: int
    available: int
    degraded: int
    progressing: int
    upgradeable: int
    timestamp: datetime
    all_healthy: bool
    has_issues: bool
    issues: tuple[str, ...] = ()


@attrs.frozen
class ClusterOperatorState:
    """``cluster:<c>:cluster_operator:<op>``."""

    available: bool
    degraded: bool
    progressing: bool
    version: str
    message: str
    timestamp: datetime


# ---------------------------------------------------------------------------- resource collection


@attrs.frozen
class ResourceMetadata:
    """``cluster:<c>:resource_metadata`` (docs/compatibility.md#r3)."""

    timestamp: datetime
    collection_time_ms: int
    truncated: bool
    total_resources: int
    pods_count: int
    deployments_count: int
    services_count: int
    statefulsets_count: int
    daemonsets_count: int


# ---------------------------------------------------------------------------- registries


@attrs.frozen
class RegistryMetaFields:
    """Hash ``registry:<r>:meta``; ``available`` is ``true``/``false`` as text."""

    last_update: datetime
    available: str


# ---------------------------------------------------------------------------- MetricSource


@wire(case="camel", time="nano")
@attrs.frozen
class MetricSourceMetaFields:
    """Hash ``metricsource:<ns>:<name>:meta``."""

    compiled_at: datetime
    hash: str
    kind: str
    api_version: str
    resource_type_name: str


@wire(case="camel", time="nano", omit_empty=("last_error",))
@attrs.frozen
class CustomResourceMeta:
    """``cluster:<c>:custom:<ns>/<name>:meta``, a JSON string (not a hash)."""

    source_id: str
    cluster_name: str
    last_collection_time: datetime
    duration_ms: int
    resource_count: int
    truncated: bool
    error_count: int = 0
    last_error: str = ""


@wire(case="camel", time="nano")
@attrs.frozen
class MetricSourceEvent:
    """One message of channel ``metricsource-events``."""

    type: str
    source_id: str
    timestamp: datetime
    data: dict[str, Any] | None = None


# ---------------------------------------------------------------------------- access policies


@attrs.frozen
class PolicyHashFields:
    """Hash ``policy:<ns>:<name>`` besides ``status`` (``data`` is the compiled policy's JSON)."""

    data: bytes
    priority: str
    effect: str
    enabled: str
    hash: str
    compiled_at: datetime


@attrs.frozen
class PolicyChange:
    """One message of channel ``policy-changes``."""

    action: str
    policy: str
    timestamp: datetime


@attrs.frozen
class PolicyEvent:
    """One message of channel ``policy-events``."""

    type: str
    policy: str
    timestamp: datetime
