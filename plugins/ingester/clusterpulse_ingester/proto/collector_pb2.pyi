import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConnectRequest(_message.Message):
    __slots__ = ("metrics", "health", "register")
    METRICS_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    REGISTER_FIELD_NUMBER: _ClassVar[int]
    metrics: MetricsBatch
    health: HealthReport
    register: RegisterRequest
    def __init__(self, metrics: _Optional[_Union[MetricsBatch, _Mapping]] = ..., health: _Optional[_Union[HealthReport, _Mapping]] = ..., register: _Optional[_Union[RegisterRequest, _Mapping]] = ...) -> None: ...

class ConnectResponse(_message.Message):
    __slots__ = ("config", "ack")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    config: ConfigUpdate
    ack: Ack
    def __init__(self, config: _Optional[_Union[ConfigUpdate, _Mapping]] = ..., ack: _Optional[_Union[Ack, _Mapping]] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("cluster_name", "token", "version")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    token: str
    version: str
    def __init__(self, cluster_name: _Optional[str] = ..., token: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class MetricsBatch(_message.Message):
    __slots__ = ("cluster_name", "batch_id", "collected_at", "cluster_metrics", "node_metrics", "custom_resources", "operators", "cluster_operators", "cluster_info", "clusterpulse")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    COLLECTED_AT_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_METRICS_FIELD_NUMBER: _ClassVar[int]
    NODE_METRICS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_OPERATORS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_INFO_FIELD_NUMBER: _ClassVar[int]
    CLUSTERPULSE_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    batch_id: str
    collected_at: _timestamp_pb2.Timestamp
    cluster_metrics: ClusterMetrics
    node_metrics: _containers.RepeatedCompositeFieldContainer[NodeMetrics]
    custom_resources: _containers.RepeatedCompositeFieldContainer[CustomResourceBatch]
    operators: _containers.RepeatedCompositeFieldContainer[OperatorInfo]
    cluster_operators: _containers.RepeatedCompositeFieldContainer[ClusterOperatorInfo]
    cluster_info: ClusterInfo
    clusterpulse: ClusterPulseExtension
    def __init__(self, cluster_name: _Optional[str] = ..., batch_id: _Optional[str] = ..., collected_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cluster_metrics: _Optional[_Union[ClusterMetrics, _Mapping]] = ..., node_metrics: _Optional[_Iterable[_Union[NodeMetrics, _Mapping]]] = ..., custom_resources: _Optional[_Iterable[_Union[CustomResourceBatch, _Mapping]]] = ..., operators: _Optional[_Iterable[_Union[OperatorInfo, _Mapping]]] = ..., cluster_operators: _Optional[_Iterable[_Union[ClusterOperatorInfo, _Mapping]]] = ..., cluster_info: _Optional[_Union[ClusterInfo, _Mapping]] = ..., clusterpulse: _Optional[_Union[ClusterPulseExtension, _Mapping]] = ...) -> None: ...

class ClusterMetrics(_message.Message):
    __slots__ = ("nodes", "nodes_ready", "namespaces", "namespace_list", "pods", "pods_running", "cpu_capacity", "memory_capacity", "deployments")
    NODES_FIELD_NUMBER: _ClassVar[int]
    NODES_READY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_LIST_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    PODS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    CPU_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    nodes: int
    nodes_ready: int
    namespaces: int
    namespace_list: _containers.RepeatedScalarFieldContainer[str]
    pods: int
    pods_running: int
    cpu_capacity: float
    memory_capacity: int
    deployments: int
    def __init__(self, nodes: _Optional[int] = ..., nodes_ready: _Optional[int] = ..., namespaces: _Optional[int] = ..., namespace_list: _Optional[_Iterable[str]] = ..., pods: _Optional[int] = ..., pods_running: _Optional[int] = ..., cpu_capacity: _Optional[float] = ..., memory_capacity: _Optional[int] = ..., deployments: _Optional[int] = ...) -> None: ...

class NodeMetrics(_message.Message):
    __slots__ = ("name", "status", "roles", "cpu_capacity", "memory_capacity", "storage_capacity", "pods_capacity", "cpu_allocatable", "memory_allocatable", "storage_allocatable", "pods_allocatable", "cpu_requested", "memory_requested", "cpu_usage_percent", "memory_usage_percent", "pods_running", "pods_pending", "pods_failed", "pods_succeeded", "pods_total", "kernel_version", "os_image", "container_runtime", "kubelet_version", "architecture", "labels", "internal_ip", "hostname")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    CPU_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    PODS_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CPU_ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    STORAGE_ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    PODS_ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    CPU_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    CPU_USAGE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USAGE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    PODS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    PODS_PENDING_FIELD_NUMBER: _ClassVar[int]
    PODS_FAILED_FIELD_NUMBER: _ClassVar[int]
    PODS_SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    PODS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    KERNEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    OS_IMAGE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    KUBELET_VERSION_FIELD_NUMBER: _ClassVar[int]
    ARCHITECTURE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    cpu_capacity: float
    memory_capacity: int
    storage_capacity: int
    pods_capacity: int
    cpu_allocatable: float
    memory_allocatable: int
    storage_allocatable: int
    pods_allocatable: int
    cpu_requested: float
    memory_requested: int
    cpu_usage_percent: float
    memory_usage_percent: float
    pods_running: int
    pods_pending: int
    pods_failed: int
    pods_succeeded: int
    pods_total: int
    kernel_version: str
    os_image: str
    container_runtime: str
    kubelet_version: str
    architecture: str
    labels: _containers.ScalarMap[str, str]
    internal_ip: str
    hostname: str
    def __init__(self, name: _Optional[str] = ..., status: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., cpu_capacity: _Optional[float] = ..., memory_capacity: _Optional[int] = ..., storage_capacity: _Optional[int] = ..., pods_capacity: _Optional[int] = ..., cpu_allocatable: _Optional[float] = ..., memory_allocatable: _Optional[int] = ..., storage_allocatable: _Optional[int] = ..., pods_allocatable: _Optional[int] = ..., cpu_requested: _Optional[float] = ..., memory_requested: _Optional[int] = ..., cpu_usage_percent: _Optional[float] = ..., memory_usage_percent: _Optional[float] = ..., pods_running: _Optional[int] = ..., pods_pending: _Optional[int] = ..., pods_failed: _Optional[int] = ..., pods_succeeded: _Optional[int] = ..., pods_total: _Optional[int] = ..., kernel_version: _Optional[str] = ..., os_image: _Optional[str] = ..., container_runtime: _Optional[str] = ..., kubelet_version: _Optional[str] = ..., architecture: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., internal_ip: _Optional[str] = ..., hostname: _Optional[str] = ...) -> None: ...

class CustomResourceBatch(_message.Message):
    __slots__ = ("source_id", "resource_count", "truncated", "duration_ms", "resources", "aggregation_values")
    class AggregationValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_VALUES_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    resource_count: int
    truncated: bool
    duration_ms: int
    resources: _containers.RepeatedCompositeFieldContainer[CustomCollectedResource]
    aggregation_values: _containers.ScalarMap[str, float]
    def __init__(self, source_id: _Optional[str] = ..., resource_count: _Optional[int] = ..., truncated: _Optional[bool] = ..., duration_ms: _Optional[int] = ..., resources: _Optional[_Iterable[_Union[CustomCollectedResource, _Mapping]]] = ..., aggregation_values: _Optional[_Mapping[str, float]] = ...) -> None: ...

class CustomCollectedResource(_message.Message):
    __slots__ = ("id", "namespace", "name", "labels", "values_json")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    VALUES_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    name: str
    labels: _containers.ScalarMap[str, str]
    values_json: bytes
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., values_json: _Optional[bytes] = ...) -> None: ...

class OperatorInfo(_message.Message):
    __slots__ = ("name", "display_name", "version", "status", "installed_namespace", "install_mode", "provider", "is_cluster_wide", "install_modes", "available_in_namespaces", "available_count", "subscription")
    class SubscriptionEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INSTALLED_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    INSTALL_MODE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    IS_CLUSTER_WIDE_FIELD_NUMBER: _ClassVar[int]
    INSTALL_MODES_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_IN_NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_COUNT_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    version: str
    status: str
    installed_namespace: str
    install_mode: str
    provider: str
    is_cluster_wide: bool
    install_modes: _containers.RepeatedScalarFieldContainer[str]
    available_in_namespaces: _containers.RepeatedScalarFieldContainer[str]
    available_count: int
    subscription: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., version: _Optional[str] = ..., status: _Optional[str] = ..., installed_namespace: _Optional[str] = ..., install_mode: _Optional[str] = ..., provider: _Optional[str] = ..., is_cluster_wide: _Optional[bool] = ..., install_modes: _Optional[_Iterable[str]] = ..., available_in_namespaces: _Optional[_Iterable[str]] = ..., available_count: _Optional[int] = ..., subscription: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ClusterOperatorInfo(_message.Message):
    __slots__ = ("name", "version", "available", "progressing", "degraded", "upgradeable", "message", "reason", "conditions", "versions", "related_objects")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    PROGRESSING_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    UPGRADEABLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    RELATED_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    available: bool
    progressing: bool
    degraded: bool
    upgradeable: bool
    message: str
    reason: str
    conditions: _containers.RepeatedCompositeFieldContainer[ClusterOperatorCondition]
    versions: _containers.RepeatedCompositeFieldContainer[ClusterOperatorVersion]
    related_objects: _containers.RepeatedCompositeFieldContainer[RelatedObject]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., available: _Optional[bool] = ..., progressing: _Optional[bool] = ..., degraded: _Optional[bool] = ..., upgradeable: _Optional[bool] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[ClusterOperatorCondition, _Mapping]]] = ..., versions: _Optional[_Iterable[_Union[ClusterOperatorVersion, _Mapping]]] = ..., related_objects: _Optional[_Iterable[_Union[RelatedObject, _Mapping]]] = ...) -> None: ...

class ClusterOperatorCondition(_message.Message):
    __slots__ = ("type", "status", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ClusterOperatorVersion(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class RelatedObject(_message.Message):
    __slots__ = ("group", "resource", "namespace", "name")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    group: str
    resource: str
    namespace: str
    name: str
    def __init__(self, group: _Optional[str] = ..., resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ClusterInfo(_message.Message):
    __slots__ = ("api_url", "version", "platform", "console_url", "channel", "cluster_id")
    API_URL_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_FIELD_NUMBER: _ClassVar[int]
    CONSOLE_URL_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    api_url: str
    version: str
    platform: str
    console_url: str
    channel: str
    cluster_id: str
    def __init__(self, api_url: _Optional[str] = ..., version: _Optional[str] = ..., platform: _Optional[str] = ..., console_url: _Optional[str] = ..., channel: _Optional[str] = ..., cluster_id: _Optional[str] = ...) -> None: ...

class HealthReport(_message.Message):
    __slots__ = ("cluster_name", "timestamp", "uptime_seconds", "buffered_batches", "last_collection_duration_ms")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    BUFFERED_BATCHES_FIELD_NUMBER: _ClassVar[int]
    LAST_COLLECTION_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    timestamp: _timestamp_pb2.Timestamp
    uptime_seconds: int
    buffered_batches: int
    last_collection_duration_ms: int
    def __init__(self, cluster_name: _Optional[str] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., uptime_seconds: _Optional[int] = ..., buffered_batches: _Optional[int] = ..., last_collection_duration_ms: _Optional[int] = ...) -> None: ...

class ConfigUpdate(_message.Message):
    __slots__ = ("metric_sources_json", "default_interval_seconds")
    METRIC_SOURCES_JSON_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    metric_sources_json: _containers.RepeatedScalarFieldContainer[bytes]
    default_interval_seconds: int
    def __init__(self, metric_sources_json: _Optional[_Iterable[bytes]] = ..., default_interval_seconds: _Optional[int] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("batch_id", "success", "error")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    success: bool
    error: str
    def __init__(self, batch_id: _Optional[str] = ..., success: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class ClusterPulseExtension(_message.Message):
    __slots__ = ("nodes", "counts", "resource_collection_json")
    NODES_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_COLLECTION_JSON_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[ExtensionNode]
    counts: ExtensionCounts
    resource_collection_json: bytes
    def __init__(self, nodes: _Optional[_Iterable[_Union[ExtensionNode, _Mapping]]] = ..., counts: _Optional[_Union[ExtensionCounts, _Mapping]] = ..., resource_collection_json: _Optional[bytes] = ...) -> None: ...

class ExtensionNode(_message.Message):
    __slots__ = ("name", "creation_timestamp", "conditions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    creation_timestamp: _timestamp_pb2.Timestamp
    conditions: _containers.RepeatedCompositeFieldContainer[ExtensionNodeCondition]
    def __init__(self, name: _Optional[str] = ..., creation_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., conditions: _Optional[_Iterable[_Union[ExtensionNodeCondition, _Mapping]]] = ...) -> None: ...

class ExtensionNodeCondition(_message.Message):
    __slots__ = ("type", "status", "reason", "message", "last_transition_time")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: _timestamp_pb2.Timestamp
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExtensionCounts(_message.Message):
    __slots__ = ("services", "statefulsets", "daemonsets", "pvcs")
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    STATEFULSETS_FIELD_NUMBER: _ClassVar[int]
    DAEMONSETS_FIELD_NUMBER: _ClassVar[int]
    PVCS_FIELD_NUMBER: _ClassVar[int]
    services: int
    statefulsets: int
    daemonsets: int
    pvcs: int
    def __init__(self, services: _Optional[int] = ..., statefulsets: _Optional[int] = ..., daemonsets: _Optional[int] = ..., pvcs: _Optional[int] = ...) -> None: ...
