"""Domain types shared by the plugins (docs/compatibility.md#redis-keys), as frozen attrs classes.

Attribute names are snake_case; the wire names are decided once, in
:mod:`clusterpulse_core.serde`. Collections default to empty, never ``None``.
"""

from clusterpulse_model.agent import AgentCertificate, AgentConnection, IngesterTransport
from clusterpulse_model.alert import Alert, Severity
from clusterpulse_model.cluster import (
    HEALTHY_MESSAGE,
    AgentStatus,
    ClusterMetrics,
    ClusterSpecRecord,
    ClusterStatusRecord,
    CredentialsRef,
    Health,
    HealthThresholds,
    HealthVerdict,
    MonitoringRecord,
    ObjectCounts,
    PodPhaseCounts,
    cluster_health,
    cluster_metrics,
    is_health_verdict,
    usage_percent,
)
from clusterpulse_model.metricsource import (
    AggregationResults,
    CollectedResource,
    CustomResourceCollection,
)
from clusterpulse_model.node import NodeCondition, NodeMetrics, NodeStatus, Taint
from clusterpulse_model.operator import (
    ClusterOperatorCondition,
    ClusterOperatorInfo,
    ClusterOperatorVersion,
    OperatorInfo,
    RelatedObject,
)
from clusterpulse_model.registry import (
    RegistryCredentialsRef,
    RegistryMetricsRecord,
    RegistryMonitoringRecord,
    RegistrySpecRecord,
    RegistryStatusRecord,
)

__all__ = [
    "HEALTHY_MESSAGE",
    "AgentCertificate",
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
    "HealthThresholds",
    "HealthVerdict",
    "IngesterTransport",
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
    "cluster_health",
    "cluster_metrics",
    "is_health_verdict",
    "usage_percent",
]
