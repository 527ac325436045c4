"""Domain types shared by the plugins (docs/compatibility.md#redis-keys), as frozen attrs classes.

Attribute names are snake_case; the wire names are decided once, in
:mod:`clusterpulse_core.serde`. Collections default to empty, never ``None``.
"""

from clusterpulse_core.model.agent import AgentConnection
from clusterpulse_core.model.alert import Alert, Severity
from clusterpulse_core.model.cluster import (
    AgentStatus,
    ClusterMetrics,
    ClusterSpecRecord,
    ClusterStatusRecord,
    CredentialsRef,
    Health,
    MonitoringRecord,
    ObjectCounts,
    PodPhaseCounts,
    cluster_metrics,
    usage_percent,
)
from clusterpulse_core.model.metricsource import (
    AggregationResults,
    CollectedResource,
    CustomResourceCollection,
)
from clusterpulse_core.model.node import NodeCondition, NodeMetrics, NodeStatus, Taint
from clusterpulse_core.model.operator import (
    ClusterOperatorCondition,
    ClusterOperatorInfo,
    ClusterOperatorVersion,
    OperatorInfo,
    RelatedObject,
)
from clusterpulse_core.model.registry import (
    RegistryCredentialsRef,
    RegistryMetricsRecord,
    RegistryMonitoringRecord,
    RegistrySpecRecord,
    RegistryStatusRecord,
)

__all__ = [
    "AgentConnection",
    "AgentStatus",
    "AggregationResults",
    "Alert",
    "ClusterMetrics",
    "ClusterOperatorCondition",
    "ClusterOperatorInfo",
    "ClusterOperatorVersion",
    "ClusterSpecRecord",
    "ClusterStatusRecord",
    "CollectedResource",
    "CredentialsRef",
    "CustomResourceCollection",
    "Health",
    "MonitoringRecord",
    "NodeCondition",
    "NodeMetrics",
    "NodeStatus",
    "ObjectCounts",
    "OperatorInfo",
    "PodPhaseCounts",
    "RegistryCredentialsRef",
    "RegistryMetricsRecord",
    "RegistryMonitoringRecord",
    "RegistrySpecRecord",
    "RegistryStatusRecord",
    "RelatedObject",
    "Severity",
    "Taint",
    "cluster_metrics",
    "usage_percent",
]
