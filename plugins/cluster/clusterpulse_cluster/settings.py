"""``[plugins.cluster]`` settings, with the upstream environment variables."""

from __future__ import annotations

import attrs

from clusterpulse_core.config import setting


@attrs.frozen
class ClusterSettings:
    """Timing and paging knobs of ClusterConnection reconciles (controllers.md §2.2)."""

    reconciliation_interval: int = setting(
        30, env="RECONCILIATION_INTERVAL", minimum=30, help="default ClusterConnection requeue, seconds")
    operator_scan_interval: int = setting(
        300, env="OPERATOR_SCAN_INTERVAL", minimum=60, help="seconds between OLM operator scans of a cluster")
    connect_timeout: int = setting(
        10, env="CONNECT_TIMEOUT", minimum=5, help="default connection-test timeout, seconds")
    page_size: int = setting(500, minimum=1, help="items per page when listing nodes and pods")
    # Push mode: the collector agent the hub installs on managed clusters (docs/agent-deploy.md).
    collector_image: str = setting(
        "clusterpulse", help="agent image repository; the tag is spec.collectorVersion or the controller version")
    collector_command: tuple[str, ...] = setting(
        ("clusterpulse", "agent"), help="agent container command (empty = the image's entrypoint)")
    ingester_tls_enabled: bool = setting(
        False, env="INGESTER_TLS_ENABLED", help="the ingester speaks TLS: agents get the TLS variables")
    ingester_tls_use_system_ca: bool = setting(
        False, env="INGESTER_TLS_USE_SYSTEM_CA", help="agents trust the system CAs (no CA ConfigMap is copied)")
    ingester_service_name: str = setting(
        "clusterpulse-ingester", env="INGESTER_SERVICE_NAME", help="agents verify <service>.<NAMESPACE>.svc")
    collector_ca_configmap: str = setting(
        "ingester-ca", env="COLLECTOR_CA_CONFIGMAP", help="hub ConfigMap holding the ingester CA bundle")
    collector_ca_namespace: str = setting(
        "", env="COLLECTOR_CA_NAMESPACE", help="its namespace (empty = the watch namespace)")
    collector_ca_key: str = setting("service-ca.crt", env="COLLECTOR_CA_KEY", help="the CA bundle's key in it")
    agent_removal_timeout: float = setting(
        300.0, help="seconds a deletion waits for an unreachable cluster before leaving the agent behind")
    agent_sweep_interval: float = setting(
        600.0, help="seconds between checks of a cluster for agent objects whose owner is gone")
