"""OLM operators and OpenShift ClusterOperators (docs/compatibility.md#redis-keys)."""

from __future__ import annotations

from datetime import datetime

import attrs

from clusterpulse_core.clock import ZERO_TIME


@attrs.frozen
class OperatorInfo:
    """One OLM operator (a Subscription's installed ClusterServiceVersion)."""

    name: str
    display_name: str = ""
    version: str = ""
    status: str = ""
    installed_namespace: str = ""
    install_modes: tuple[str, ...] = ()
    install_mode: str = ""
    provider: str = ""
    created_at: datetime = ZERO_TIME
    updated_at: datetime = ZERO_TIME
    is_cluster_wide: bool = False
    available_in_namespaces: tuple[str, ...] = ()
    available_count: int = 0
    subscription: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class ClusterOperatorCondition:
    """One condition of a ClusterOperator."""

    type: str = ""
    status: str = ""
    last_transition_time: datetime = ZERO_TIME
    reason: str = ""
    message: str = ""


@attrs.frozen
class ClusterOperatorVersion:
    """One ``status.versions`` entry of a ClusterOperator."""

    name: str = ""
    version: str = ""


@attrs.frozen
class RelatedObject:
    """One ``status.relatedObjects`` entry of a ClusterOperator."""

    group: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""


@attrs.frozen
class ClusterOperatorInfo:
    """One OpenShift ClusterOperator with its condition flags."""

    name: str
    version: str = ""
    available: bool = False
    progressing: bool = False
    degraded: bool = False
    upgradeable: bool = False
    message: str = ""
    reason: str = ""
    last_transition_time: datetime = ZERO_TIME
    conditions: tuple[ClusterOperatorCondition, ...] = ()
    versions: tuple[ClusterOperatorVersion, ...] = ()
    related_objects: tuple[RelatedObject, ...] = ()
