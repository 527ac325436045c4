"""Cluster-level records: the stored spec, status and aggregate metrics."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import attrs

from clusterpulse_core.model.time import ZERO_TIME
from clusterpulse_core.serde import wire


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
    """``cluster:<c>:spec`` (redis.md §2.2): camelCase on the wire."""

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
    """``cluster:<c>:status`` (redis.md §2.4); ``agent`` only for push-mode clusters (an addition)."""

    health: str = Health.UNKNOWN.value
    message: str = ""
    last_check: datetime = ZERO_TIME
    agent: AgentStatus | None = None


@attrs.frozen
class ClusterMetrics:
    """Cluster totals (controllers.md §3.3); ``namespace_list`` is stored separately."""

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
