"""``[plugins.cluster]`` settings, with the upstream environment variables."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
from clusterpulse_model import HealthThresholds

from clusterpulse_core.config import setting

#: This project's image (it runs the agent as ``clusterpulse agent``), with its registry host: a short
#: name would be resolved through each node's registry search list.
DEFAULT_COLLECTOR_IMAGE = "quay.io/clusterpulse/clusterpulse"


def fully_qualified(image: str) -> bool:
    """Whether an image reference starts with a registry host (``quay.io/...``, ``localhost:5000/...``)."""
    first, sep, _rest = image.partition("/")
    return bool(sep) and ("." in first or ":" in first or first == "localhost")


def _fraction(value: float) -> None:
    if not 0 < value <= 1:
        raise ValueError(f"must be in (0, 1], got {value}")


def _percent(value: float) -> None:
    if not 0 <= value <= 100:
        raise ValueError(f"must be a percentage in [0, 100], got {value}")


@attrs.frozen
class ClusterSettings:
    """Timing, paging and resource-collection knobs of ClusterConnection reconciles
    (docs/compatibility.md#environment)."""

    reconciliation_interval: int = setting(
        30, env="RECONCILIATION_INTERVAL", minimum=30, help="default ClusterConnection requeue, seconds"
    )
    operator_scan_interval: int = setting(
        300, env="OPERATOR_SCAN_INTERVAL", minimum=60, help="seconds between OLM operator scans of a cluster"
    )
    connect_timeout: int = setting(
        10, env="CONNECT_TIMEOUT", minimum=5, help="default connection-test timeout, seconds"
    )
    page_size: int = setting(500, minimum=1, help="items per page when listing nodes and pods")
    agent_silence_limit: float = setting(
        90.0, help="a push agent not heard from for this many seconds is treated as gone (pull fallback)"
    )
    max_annotation_bytes: int = setting(
        8192, minimum=64, help="longest stored node annotation value, bytes (longer ones are truncated)"
    )
    max_nodes: int = setting(
        5000,
        minimum=1,
        help="nodes stored per cluster (Kubernetes supports up to 5,000); the rest are counted, reported "
        "in the status and clusterpulse_collection_skipped, not stored",
    )
    max_list_objects: int = setting(
        10_000,
        minimum=1,
        help="namespaces, OLM Subscriptions and ClusterOperators read per cluster (Kubernetes' threshold "
        "is 10,000 namespaces); the rest are counted and reported, not stored",
    )
    collect_timeout: int = setting(
        60, minimum=5, help="deadline of one reconcile when spec.monitoring.timeout is unset, seconds"
    )
    # Resource collection (docs/compatibility.md#r3): the upstream names, defaults and minimums.
    resource_collection_enabled: bool = setting(
        True,
        env="RESOURCE_COLLECTION_ENABLED",
        help="store pod, deployment, service, statefulset and daemonset lists for the API",
    )
    max_pods_per_namespace: int = setting(
        100, env="MAX_PODS_PER_NAMESPACE", minimum=10, help="pods kept per namespace in the pod list"
    )
    max_total_pods: int = setting(
        1000,
        env="MAX_TOTAL_PODS",
        minimum=50,
        help="pods per cluster considered for the pod list (the first, in API order)",
    )
    max_deployments: int = setting(
        500, env="MAX_DEPLOYMENTS", minimum=10, help="deployments (and statefulsets) read per cluster"
    )
    max_services: int = setting(500, env="MAX_SERVICES", minimum=10, help="services read per cluster")
    collect_resource_labels: bool = setting(
        False, env="COLLECT_RESOURCE_LABELS", help="copy each listed resource's labels"
    )
    resource_namespace_filter: str = setting(
        "",
        env="RESOURCE_NAMESPACE_FILTER",
        help="when non-empty, pods in kube-* namespaces are left out of the pod list (upstream rule)",
    )
    # Health (docs/readers.md#r7-health): the upstream names and defaults.
    node_unhealthy_threshold: float = setting(
        0.5,
        env="NODE_UNHEALTHY_THRESHOLD",
        check=_fraction,
        help="share of nodes not Ready from which a cluster is unhealthy (any not Ready: degraded)",
    )
    cpu_critical_threshold: float = setting(
        90.0,
        env="CPU_CRITICAL_THRESHOLD",
        check=_percent,
        help="requested CPU above this percentage of allocatable makes a cluster degraded",
    )
    memory_critical_threshold: float = setting(
        90.0,
        env="MEMORY_CRITICAL_THRESHOLD",
        check=_percent,
        help="requested memory above this percentage of allocatable makes a cluster degraded",
    )
    cpu_warning_threshold: float = setting(
        85.0,
        env="CPU_WARNING_THRESHOLD",
        check=_percent,
        help="requested CPU above this percentage is named in the status message",
    )
    memory_warning_threshold: float = setting(
        85.0,
        env="MEMORY_WARNING_THRESHOLD",
        check=_percent,
        help="requested memory above this percentage is named in the status message",
    )
    # Push mode: the collector agent the hub installs on managed clusters (docs/agent-deploy.md).
    collector_image: str = setting(
        DEFAULT_COLLECTOR_IMAGE,
        help="agent image repository, fully qualified (registry host first); the tag is "
        "spec.collectorVersion or the controller version; repo@sha256:... pins a digest",
    )
    collector_command: tuple[str, ...] = setting(
        ("clusterpulse", "agent"), help="agent container command (empty = the image's entrypoint)"
    )
    collector_token_source: str = setting(
        "hub",
        env="COLLECTOR_TOKEN_SOURCE",
        choices=("hub", "credentials"),
        help="token given to deployed agents: 'hub' = minted per cluster (docs/push-mode.md#collector-tokens); "
        "'credentials' = the ClusterConnection's credentials token (the Go hub's behaviour)",
    )
    ingester_tls_enabled: bool | None = setting(
        None,
        env="INGESTER_TLS_ENABLED",
        help="only without the ingester plugin: whether the ingester speaks TLS (unset = true); with it, its "
        "tls_enabled decides, and a different value here is an error",
    )
    ingester_tls_use_system_ca: bool = setting(
        False, env="INGESTER_TLS_USE_SYSTEM_CA", help="agents trust the system CAs (no CA ConfigMap is copied)"
    )
    ingester_service_name: str = setting(
        "clusterpulse-ingester", env="INGESTER_SERVICE_NAME", help="agents verify <service>.<NAMESPACE>.svc"
    )
    collector_ca_configmap: str = setting(
        "ingester-ca", env="COLLECTOR_CA_CONFIGMAP", help="hub ConfigMap holding the ingester CA bundle"
    )
    collector_ca_namespace: str = setting(
        "", env="COLLECTOR_CA_NAMESPACE", help="its namespace (empty = the watch namespace)"
    )
    collector_ca_key: str = setting("service-ca.crt", env="COLLECTOR_CA_KEY", help="the CA bundle's key in it")
    agent_removal_timeout: float = setting(
        300.0, help="seconds a deletion waits for an unreachable cluster before leaving the agent behind"
    )
    agent_sweep_interval: float = setting(
        600.0, help="seconds between checks of a cluster for agent objects whose owner is gone"
    )

    def settings_warnings(self) -> Iterator[str]:
        """Insecure choices: an agent image without its registry host, agents told to push in plaintext."""
        if self.ingester_tls_enabled is False:
            yield (
                "ingester_tls_enabled: false: deployed agents push to the ingester in plaintext; their collector "
                "tokens and batches travel in clear (docs/push-mode.md#tls)"
            )
        if not fully_qualified(self.collector_image):
            yield (
                f"collector_image: {self.collector_image!r} names no registry host: each managed cluster's "
                f"nodes resolve it through their own registry search list (docs/security.md#the-agent-pod)"
            )

    def health_thresholds(self) -> HealthThresholds:
        """The health thresholds these settings give."""
        return HealthThresholds(
            self.node_unhealthy_threshold,
            self.cpu_critical_threshold,
            self.memory_critical_threshold,
            self.cpu_warning_threshold,
            self.memory_warning_threshold,
        )
