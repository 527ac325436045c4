"""Client certificates (mTLS, docs/push-mode.md#client-certificates), end to end.

A real Manager (redis, cluster, metricsource, ingester) with ``require_client_certificates`` deploys
the agents of two push clusters on kube_api emulators: each gets a client certificate naming its
cluster, issued by the hub's CA, in the Secret ``clusterpulse-collector-tls`` on its cluster, mounted
into the Deployment. The deployed agent runs as a local ``clusterpulse agent`` process in place of its
pod and pushes; the agent's own TLS code, without a certificate, is refused at the handshake, and with
the other cluster's certificate at registration.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import grpc
import pytest
import redis
from clusterpulse_ingester.server import REFUSED
from clusterpulse_ingester.settings import IngesterSettings
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import free_port
from cryptography import x509
from push_support import (
    AGENT_NS,
    SERVER_NAME,
    WAIT,
    agent_register,
    cluster_connection,
    deployed_env,
    hub_ca,
    local_agent,
    managed_objects,
    secret,
    write_config,
)

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager

MANAGED_TOKEN = "lab-cluster-token"
CLIENT_SECRET = "clusterpulse-collector-tls"


@pytest.fixture
def manager(hub: Any, redis_url: str, tmp_path: Path) -> Iterator[tuple[Manager, int]]:
    port = free_port()
    config_file = write_config(
        tmp_path / "hub.toml",
        ["redis", "cluster", "metricsource", "ingester"],
        {
            "redis": {"url": redis_url},
            "ingester": {
                "bind_address": "127.0.0.1",
                "port": port,
                "stop_grace": 2.0,
                "require_client_certificates": True,
            },
        },
    )
    config, host = load(str(config_file), env={})
    manager = Manager(build_runtime(config, host, hub=KubeClient(hub.api_client())), identity="mtls-test")
    manager.start()
    try:
        yield manager, port
    finally:
        manager.stop()


def _deployed(lab: Any, tmp_path: Path, name: str) -> dict[str, str]:
    """The Deployment's environment with the mounted files (token, CA bundle, client certificate) written
    where a local process reads them."""
    deployment, env = deployed_env(lab)
    pod = deployment["spec"]["template"]["spec"]
    assert env["INGESTER_TLS_CLIENT_CERT"] == "/etc/ingester-client/tls.crt"
    assert env["INGESTER_TLS_CLIENT_KEY"] == "/etc/ingester-client/tls.key"
    assert {"name": CLIENT_SECRET, "secret": {"secretName": CLIENT_SECRET}} in pod["volumes"]
    client = lab.get("v1", "secrets", CLIENT_SECRET, AGENT_NS)
    assert client["type"] == "kubernetes.io/tls"
    files = {key: base64.b64decode(value).decode() for key, value in client["data"].items()}
    for variable, text in (
        ("INGESTER_TLS_CA", lab.get("v1", "configmaps", "ingester-ca", AGENT_NS)["data"]["service-ca.crt"]),
        ("INGESTER_TLS_CLIENT_CERT", files["tls.crt"]),
        ("INGESTER_TLS_CLIENT_KEY", files["tls.key"]),
    ):
        path = tmp_path / f"{name}-{variable.lower()}.pem"
        path.write_text(text)
        env[variable] = str(path)
    return env


def test_with_client_certificates_required_only_the_clusters_own_certificate_registers(
    hub: Any, kube_api: Callable[..., Any], manager: tuple[Manager, int], redis_url: str, tmp_path: Path
) -> None:
    running, port = manager
    labs = {}
    for name in ("lab", "lab2"):
        labs[name] = kube_api(objects=managed_objects(), require_token=MANAGED_TOKEN)
        hub.create(secret(f"{name}-token", MANAGED_TOKEN))
        hub.create(cluster_connection(name, labs[name].url, push=True, ingester=f"127.0.0.1:{port}"))
    env = _deployed(labs["lab"], tmp_path, "lab")
    other = _deployed(labs["lab2"], tmp_path, "lab2")

    # The certificate names its cluster and was issued by the hub's CA, which the agents trust.
    cert = x509.load_pem_x509_certificate(Path(env["INGESTER_TLS_CLIENT_CERT"]).read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["lab"]
    assert any(cert.issuer == ca.subject for ca in x509.load_pem_x509_certificates(hub_ca(hub).encode()))

    kubeconfig = labs["lab"].write_kubeconfig(tmp_path / "lab.kubeconfig", token=MANAGED_TOKEN)
    agent = local_agent(env, kubeconfig, tmp_path)
    client = redis.Redis.from_url(redis_url)
    try:
        eventually(lambda: client.get("cluster:lab:metrics"), "a batch from the agent with its certificate", WAIT)
    finally:
        agent.stop()
        client.close()

    base = IngesterSettings(
        cluster_name="lab",
        collector_token=env["COLLECTOR_TOKEN"],
        ingester_address=f"127.0.0.1:{port}",
        tls_ca=env["INGESTER_TLS_CA"],
        tls_server_name=SERVER_NAME,
    )
    # The right certificate registers.
    own = attrs.evolve(
        base, tls_client_cert=env["INGESTER_TLS_CLIENT_CERT"], tls_client_key=env["INGESTER_TLS_CLIENT_KEY"]
    )
    assert asyncio.run(agent_register(own, "lab", env["COLLECTOR_TOKEN"])).WhichOneof("payload") == "config"

    # No certificate: refused by the TLS handshake, before any message.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        asyncio.run(agent_register(base, "lab", env["COLLECTOR_TOKEN"]))
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE

    # The other cluster's certificate (valid, same CA) with this cluster's token: refused at registration.
    borrowed = attrs.evolve(
        base, tls_client_cert=other["INGESTER_TLS_CLIENT_CERT"], tls_client_key=other["INGESTER_TLS_CLIENT_KEY"]
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        asyncio.run(agent_register(borrowed, "lab", env["COLLECTOR_TOKEN"]))
    assert (info.value.code(), info.value.details()) == (grpc.StatusCode.UNAUTHENTICATED, REFUSED)
    assert (
        running.runtime.metrics.get_sample_value(
            "clusterpulse_ingester_streams_rejected_total", {"reason": "certificate_mismatch"}
        )
        == 1
    )
