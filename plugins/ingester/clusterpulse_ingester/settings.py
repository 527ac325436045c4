"""``[plugins.ingester]`` settings: the hub's ingester and the collector agent, with the upstream names.

One section serves both processes: the manager reads the ingester half (docs/compatibility.md#environment),
``clusterpulse agent`` the agent half (docs/compatibility.md#environment). Environment variables override the file
with the
upstream parsing rules.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from clusterpulse_core.config import setting
from clusterpulse_core.kube.hub import SERVICE_ACCOUNT_DIR

MIB = 1024 * 1024


@attrs.frozen
class IngesterSettings:
    """Ingester (hub) and collector agent (managed cluster) settings."""

    # ------------------------------------------------------------------ ingester (hub)
    enabled: bool = setting(True, env="INGESTER_ENABLED", help="start the gRPC ingester in the manager")
    port: int = setting(9443, env="INGESTER_PORT", minimum=1024, help="ingester listen port")
    bind_address: str = setting("0.0.0.0", help="ingester listen address")
    tls_enabled: bool = setting(
        True,
        env="INGESTER_TLS_ENABLED",
        help="TLS on the ingester (and, in the agent, to the ingester); false = plaintext, "
        "an explicit opt-out (warned about, gauge and condition)",
    )
    tls_cert: str = setting("/etc/ingester-tls/tls.crt", env="INGESTER_TLS_CERT", help="ingester PEM certificate")
    tls_key: str = setting("/etc/ingester-tls/tls.key", env="INGESTER_TLS_KEY", help="ingester PEM private key")
    tls_certificates: str = setting(
        "auto",
        choices=("auto", "files", "hub"),
        help="ingester: 'files' = INGESTER_TLS_CERT/INGESTER_TLS_KEY (your own); 'hub' = a CA and certificate "
        "the hub makes, keeps in Secrets and renews; 'auto' = files when INGESTER_TLS_CERT exists, else hub",
    )
    tls_server_names: tuple[str, ...] = setting(
        (), help="ingester, hub certificates: external names (DNS or IP) agents dial, besides the Service's"
    )
    tls_ca_lifetime_days: int = setting(3650, minimum=2, help="ingester, hub certificates: CA lifetime, days")
    tls_cert_lifetime_days: int = setting(
        90, minimum=1, help="ingester, hub certificates: server certificate lifetime, days"
    )
    require_client_certificates: bool = setting(
        False,
        env="INGESTER_TLS_REQUIRE_CLIENT_CERT",
        help="ingester: agents must present a client certificate naming their cluster (mTLS); the hub issues "
        "one to each agent it deploys (hub certificates)",
    )
    tls_client_ca: str = setting(
        "",
        env="INGESTER_TLS_CLIENT_CA",
        help="ingester: PEM bundle of the CAs whose client certificates are accepted; empty = the hub's CA "
        "(hub certificates)",
    )
    tls_client_cert_lifetime_days: int = setting(
        30, minimum=1, help="ingester, hub certificates: lifetime of the client certificates issued to agents, days"
    )
    tls_renew_check_interval: float = setting(
        3600.0, above=0, help="ingester, hub certificates: seconds between checks that renew what is due"
    )
    tls_ca_rotation_grace: float = setting(
        7 * 86400.0,
        minimum=0,
        help="agent rotate-ca: seconds the previous CA still issues the server certificate (agents receive the "
        "new bundle meanwhile)",
    )
    service_name: str = setting(
        "clusterpulse-ingester",
        env="INGESTER_SERVICE_NAME",
        help="ingester: its Service, whose names the hub's certificate is valid for",
    )
    ca_configmap: str = setting(
        "ingester-ca",
        env="COLLECTOR_CA_CONFIGMAP",
        help="ingester, hub certificates: hub ConfigMap the CA bundle is published in",
    )
    ca_configmap_namespace: str = setting(
        "", env="COLLECTOR_CA_NAMESPACE", help="its namespace (empty = the watch namespace)"
    )
    ca_configmap_key: str = setting("service-ca.crt", env="COLLECTOR_CA_KEY", help="the CA bundle's key in it")
    max_message_bytes: int = setting(
        16 * MIB, minimum=64 * 1024, help="largest gRPC message accepted (ingester) or sent (agent), bytes"
    )
    max_batch_nodes: int = setting(
        5000,
        minimum=1,
        help="ingester: nodes stored from one batch (Kubernetes supports up to 5,000 per cluster); the rest "
        "are counted, reported in the cluster's status message and clusterpulse_collection_skipped",
    )
    max_batch_objects: int = setting(
        10_000,
        minimum=1,
        help="ingester: items stored from any other list of one batch (namespaces, operators, each "
        "MetricSource's resources, each resource list); the rest are counted and reported",
    )
    register_timeout: float = setting(10.0, help="ingester: seconds a new stream has to register before it is ended")
    max_register_bytes: int = setting(
        64 * 1024, minimum=1024, help="ingester: largest message accepted on a stream not registered yet, bytes"
    )
    max_unregistered_streams: int = setting(
        256, minimum=1, help="ingester: streams not registered yet, at most, from all peers"
    )
    max_streams_per_peer: int = setting(
        16, minimum=1, help="ingester: streams not registered yet, at most, from one peer address"
    )
    auth_failures_before_backoff: int = setting(
        5, minimum=1, help="ingester: failed registrations from one peer address before it is made to wait"
    )
    auth_backoff_max: float = setting(
        60.0, help="ingester: longest wait imposed on a peer address after failed registrations, s"
    )
    collector_token_source: str = setting(
        "hub",
        env="COLLECTOR_TOKEN_SOURCE",
        choices=("hub", "credentials"),
        help="ingester (and the cluster plugin's agent deploy): 'hub' = a token minted per cluster; "
        "'credentials' = the ClusterConnection's credentials token (the Go hub's behaviour)",
    )
    token_rotation_grace: float = setting(
        3600.0, help="agent rotate-token: seconds the previous collector token is still accepted"
    )
    keepalive_time: float = setting(30.0, help="ping a silent peer after this many seconds")
    keepalive_timeout: float = setting(10.0, help="close the connection when a ping is not answered in time")
    min_ping_interval: float = setting(10.0, help="ingester: shortest ping interval allowed from an agent")
    stop_grace: float = setting(10.0, help="ingester: seconds to finish in-flight batches when stopping")
    agent_collect_interval: int = setting(
        0, minimum=0, help="collect interval sent to agents in every ConfigUpdate; 0 leaves COLLECT_INTERVAL"
    )

    # ------------------------------------------------------------------ collector agent
    cluster_name: str = setting("", env="CLUSTER_NAME", help="agent: this cluster's ClusterConnection name")
    ingester_address: str = setting("ingester:9443", env="INGESTER_ADDRESS", help="agent: ingester host:port")
    collector_token: str = setting(
        "", env="COLLECTOR_TOKEN", secret=True, help="agent: bearer token (the cluster's credentials Secret token)"
    )
    collect_interval: float = setting(60.0, env="COLLECT_INTERVAL", help="agent: seconds between collections")
    buffer_size: int = setting(10, env="BUFFER_SIZE", help="agent: batches kept while the ingester is away")
    tls_ca: str = setting("", env="INGESTER_TLS_CA", help="agent: PEM CA bundle; empty = system trust store")
    tls_server_name: str = setting(
        "", env="INGESTER_TLS_SERVER_NAME", help="agent: name the ingester certificate is verified against"
    )
    tls_client_cert: str = setting(
        "", env="INGESTER_TLS_CLIENT_CERT", help="agent: PEM client certificate presented to the ingester (mTLS)"
    )
    tls_client_key: str = setting("", env="INGESTER_TLS_CLIENT_KEY", help="agent: its PEM private key")
    heartbeat_interval: float = setting(30.0, help="agent: seconds between health reports")
    ack_timeout: float = setting(60.0, help="agent: seconds to wait for a batch's ack before reconnecting")
    flush_timeout: float = setting(5.0, help="agent: on SIGTERM, seconds allowed to send what is buffered")
    backoff_cap: float = setting(300.0, help="agent: longest reconnect delay, seconds (C7)")
    reconnect_probe_interval: float = setting(
        1.0,
        minimum=0.0,
        help="agent: while backing off, how often to check (TCP connect) whether the ingester listens again; "
        "0 = only the backoff",
    )
    service_account_dir: str = setting(
        SERVICE_ACCOUNT_DIR,
        env="SERVICE_ACCOUNT_DIR",
        help="agent, in a pod: the mounted service account (token, ca.crt) used for its own cluster",
    )

    def settings_problems(self) -> Iterator[str]:
        """A renewed hub CA must outlive the certificates its predecessor still issues (docs/push-mode.md#tls);
        client certificates need TLS and, with your own server certificate, your own client CA."""
        for name, days in (
            ("tls_cert_lifetime_days", self.tls_cert_lifetime_days),
            ("tls_client_cert_lifetime_days", self.tls_client_cert_lifetime_days),
        ):
            if self.tls_ca_lifetime_days <= 3 * days:
                yield (
                    f"tls_ca_lifetime_days: must be more than 3 x {name} ({3 * days}), got {self.tls_ca_lifetime_days}"
                )
        if self.require_client_certificates and not self.tls_enabled:
            yield "require_client_certificates: needs tls_enabled = true (client certificates are part of TLS)"
        if self.require_client_certificates and self.tls_certificates == "files" and not self.tls_client_ca:
            yield (
                'require_client_certificates: with tls_certificates = "files" (your own certificate) set '
                "tls_client_ca, the CAs whose client certificates are accepted"
            )
        if bool(self.tls_client_cert) != bool(self.tls_client_key):
            yield "tls_client_cert: INGESTER_TLS_CLIENT_CERT and INGESTER_TLS_CLIENT_KEY go together"

    def settings_warnings(self) -> Iterator[str]:
        """Insecure choices: a plaintext ingester (collector tokens and batches travel in clear)."""
        if not self.tls_enabled:
            yield (
                "tls_enabled: false: the ingester (and the agent, to it) speaks plaintext; collector tokens and "
                "batches travel in clear (docs/push-mode.md#tls)"
            )
