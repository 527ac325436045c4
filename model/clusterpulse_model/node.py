"""Node metrics (docs/compatibility.md#redis-keys)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import attrs

from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.serde import wire


class NodeStatus(StrEnum):
    """The node status enumeration."""

    READY = "Ready"
    NOT_READY = "NotReady"
    UNKNOWN = "Unknown"
    SCHEDULING_DISABLED = "SchedulingDisabled"


@attrs.frozen
class NodeCondition:
    """One ``status.conditions`` entry of a node."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: datetime = ZERO_TIME


@attrs.frozen
class Taint:
    """One ``spec.taints`` entry of a node."""

    key: str = ""
    value: str = ""
    effect: str = ""


@wire(omit_empty=("creation_timestamp",))
@attrs.frozen
class NodeMetrics:
    """Everything collected about one node in one collection."""

    name: str
    timestamp: datetime = ZERO_TIME
    status: str = NodeStatus.UNKNOWN.value
    roles: tuple[str, ...] = ()
    conditions: tuple[NodeCondition, ...] = ()
    cpu_capacity: float = 0.0
    memory_capacity: int = 0
    storage_capacity: int = 0
    pods_capacity: int = 0
    cpu_allocatable: float = 0.0
    memory_allocatable: int = 0
    storage_allocatable: int = 0
    pods_allocatable: int = 0
    cpu_requested: float = 0.0
    memory_requested: int = 0
    cpu_usage_percent: float = 0.0
    memory_usage_percent: float = 0.0
    pods_running: int = 0
    pods_pending: int = 0
    pods_failed: int = 0
    pods_succeeded: int = 0
    pods_total: int = 0
    kernel_version: str = ""
    os_image: str = ""
    container_runtime: str = ""
    kubelet_version: str = ""
    architecture: str = ""
    labels: dict[str, str] = attrs.field(factory=dict)
    annotations: dict[str, str] = attrs.field(factory=dict)
    taints: tuple[Taint, ...] = ()
    internal_ip: str = ""
    external_ip: str = ""
    hostname: str = ""
    images_count: int = 0
    volumes_attached: int = 0
    #: ``metadata.creationTimestamp`` (docs/readers.md, R6: the UI shows the node's age from it);
    #: ``None`` when unknown, and then left out of the stored value (readers show "Unknown").
    creation_timestamp: datetime | None = None
