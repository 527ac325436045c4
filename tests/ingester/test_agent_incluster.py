"""The agent as it runs in a pod: in-cluster config over HTTPS with the mounted service account.

No ``--kubeconfig``: ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT`` name the API server
(an emulator serving TLS with a private CA and requiring the service-account token), and
``SERVICE_ACCOUNT_DIR`` points at a directory laid out as the kubelet mounts it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import free_port
from clusterpulse_testing.tls import make_certificates
from push_support import TOKEN, AgentProcess, managed_objects, write_config

from clusterpulse_core.serde import loads

SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.service-account-token"


def test_agent_in_a_pod_uses_the_service_account_over_tls(
    start_ingester: Callable[..., tuple[Any, Any]], kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    runtime, _recording = start_ingester()
    port = runtime.plugins.plugin("ingester").server.port
    certs = tmp_path / "certs"
    certs.mkdir()
    made = make_certificates(certs, "kubernetes.default.svc", ip="127.0.0.1")
    ca, cert, key = made.ca_file, made.cert_file, made.key_file
    cluster = kube_api(objects=managed_objects(), require_token=SA_TOKEN, tls_cert=cert, tls_key=key)
    assert cluster.url.startswith("https://")

    account = tmp_path / "serviceaccount"  # what the kubelet mounts at /var/run/secrets/kubernetes.io/...
    account.mkdir()
    (account / "token").write_text(SA_TOKEN)
    (account / "ca.crt").write_bytes(ca.read_bytes())
    (account / "namespace").write_text("clusterpulse-agent")
    home = tmp_path / "home"  # no ~/.kube/config to fall back on
    home.mkdir()
    metrics_port = free_port()
    config = write_config(
        tmp_path / "agent.toml",
        ["cluster", "metricsource", "ingester"],
        {"ingester": {"collect_interval": 0.5, "heartbeat_interval": 1.0}},
        core={"metrics_bind_address": f"127.0.0.1:{metrics_port}"},
    )
    # The ingester fixture talks plaintext (this test is about the agent's own cluster): said explicitly.
    env = {
        "CLUSTER_NAME": "edge",
        "INGESTER_ADDRESS": f"127.0.0.1:{port}",
        "COLLECTOR_TOKEN": TOKEN + "edge",
        "INGESTER_TLS_ENABLED": "false",
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(cluster.port),
        "SERVICE_ACCOUNT_DIR": str(account),
        "HOME": str(home),
    }
    agent = AgentProcess(config, None, metrics_port, tmp_path / "agent.log", env=env)
    client = redis.Redis.from_url(redis_url)
    try:
        raw = eventually(lambda: client.get("cluster:edge:metrics"), "a batch collected in-cluster", timeout=30)
        metrics = loads(raw)
        assert metrics["nodes"] == 3 and metrics["pods"] == 5
        assert sorted(loads(client.get("cluster:edge:namespaces"))["namespaces"]) == [
            "app-a",
            "app-b",
            "default",
            "kube-system",
        ]
    finally:
        assert agent.stop() == 0, agent.output()[-3000:]
        client.close()
    # Every read of the cluster was the agent's, over TLS, accepted with the service-account token
    # (the emulator answers 401 to anything else, and a refused node listing leaves no metrics).
    reads = cluster.callers
    assert reads and {r.user_agent.split("/")[0] for r in reads} == {"clusterpulse-agent"}
    assert any(r.path == "/api/v1/nodes" for r in reads)
    # A 401 as a status, not the milliseconds of a log timestamp ("20:41:12,401").
    assert not re.search(r"(?<![,.\d])401(?!\d)", agent.output()) and "Unauthorized" not in agent.output()


def test_agent_without_a_service_account_says_what_is_missing(tmp_path: Path) -> None:
    config = write_config(tmp_path / "agent.toml", ["cluster", "metricsource", "ingester"], {"ingester": {}})
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "CLUSTER_NAME": "edge",
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "1",
        "SERVICE_ACCOUNT_DIR": str(tmp_path / "nowhere"),
        "HOME": str(home),
    }
    agent = AgentProcess(config, None, 0, tmp_path / "agent.log", env=env)
    assert agent.process.wait(30) == 1
    agent.stop()
    assert "cannot reach the local cluster: in-cluster configuration from" in agent.output()
    assert "Service token file does not exist" in agent.output()
