"""End to end: the hub deploys a push-mode agent, and that agent reports.

A real Manager (redis, cluster, metricsource, ingester plugins) reconciles a push-mode
ClusterConnection whose cluster is a kube_api emulator. The hub creates the agent's objects
there; an emulator runs no pods, so this test runs the deployed agent as a local
``clusterpulse agent`` process **in place of the Deployment's pod**, configured from what the
hub wrote: the Deployment's environment and the token from the Secret it created. The agent
connects, the status says so, a version change rolls the Deployment under the running agent,
and deleting the ClusterConnection removes everything the hub created.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from clusterpulse_cluster.agent_deploy.deployer import FINALIZER
from clusterpulse_model import collector_token
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import free_port
from cryptography import x509
from push_support import (
    AGENT_NS,
    CC_API,
    CLUSTERPULSE,
    HUB_NAMESPACE,
    SERVER_NAME,
    WAIT,
    AgentProcess,
    Stream,
    agent_connection,
    cluster_connection,
    deployed_env,
    local_agent,
    managed_objects,
    secret,
    write_config,
)

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager

MANAGED_TOKEN = "lab-cluster-token"


def start_manager(hub: Any, redis_url: str, config_file: Path, port: int, **ingester: Any) -> Manager:
    """A started Manager (redis, cluster, metricsource, ingester on ``port``) against the hub emulator."""
    write_config(
        config_file,
        ["redis", "cluster", "metricsource", "ingester"],
        {
            "redis": {"url": redis_url},
            "cluster": {"agent_silence_limit": 5.0},
            "ingester": {"bind_address": "127.0.0.1", "port": port, "stop_grace": 2.0, **ingester},
        },
    )
    config, host = load(str(config_file), env={})
    manager = Manager(build_runtime(config, host, hub=KubeClient(hub.api_client())), identity="deploy-test")
    manager.start()
    return manager


@pytest.fixture
def manager(hub: Any, redis_url: str, tmp_path: Path) -> Iterator[tuple[Manager, int]]:
    port = free_port()
    manager = start_manager(hub, redis_url, tmp_path / "hub.toml", port)
    try:
        yield manager, port
    finally:
        manager.stop()


def test_the_hub_deploys_the_agent_which_then_reports(
    hub: Any, kube_api: Callable[..., Any], manager: tuple[Manager, int], redis_url: str, tmp_path: Path
) -> None:
    _running, port = manager
    lab = kube_api(objects=managed_objects(), require_token=MANAGED_TOKEN)
    hub.create(secret("lab-token", MANAGED_TOKEN))
    hub.create(cluster_connection("lab", lab.url, push=True, ingester=f"127.0.0.1:{port}"))

    deployment, env = deployed_env(lab)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"] == ["clusterpulse", "agent"]
    assert env["CLUSTER_NAME"] == "lab" and env["INGESTER_ADDRESS"] == f"127.0.0.1:{port}"
    status = eventually(
        lambda: (hub.get(CC_API, "clusterconnections", "lab", HUB_NAMESPACE).get("status") or {}).get("agent"),
        "status.agent",
        timeout=WAIT,
    )
    assert status["connected"] is False
    # TLS by default: the agent verifies the ingester's certificate (made by the hub) against the CA
    # bundle the hub copied to the cluster, for the Service name the hub set.
    assert env["INGESTER_TLS_ENABLED"] == "true"
    assert env["INGESTER_TLS_SERVER_NAME"] == SERVER_NAME
    assert env["INGESTER_TLS_CA"] == "/etc/ingester-ca/service-ca.crt"
    _mount_ca(lab, env, tmp_path)

    # No kubelet here: run what the Deployment describes as a local process in place of its pod,
    # with the Deployment's environment; the kubeconfig stands in for the pod's service account.
    print("running the hub-deployed agent as a local `clusterpulse agent` process in place of its pod")
    kubeconfig = lab.write_kubeconfig(tmp_path / "lab.kubeconfig", token=MANAGED_TOKEN)
    agent = local_agent(env, kubeconfig, tmp_path)
    client = redis.Redis.from_url(redis_url)
    try:
        eventually(lambda: client.get("cluster:lab:metrics"), "a batch from the deployed agent", timeout=WAIT)

        # One reconcile patches status.agent (the deployer), then the push state (collectorStatus):
        # wait for one status showing both.
        def both_connected() -> dict[str, Any] | None:
            status = hub.get(CC_API, "clusterconnections", "lab", HUB_NAMESPACE).get("status") or {}
            agent, collector = status.get("agent") or {}, status.get("collectorStatus") or {}
            return status if agent.get("connected") and collector.get("connected") else None

        status = eventually(both_connected, "status.agent and status.collectorStatus connected", timeout=60)
        assert status["agent"]["deployed"] is True
        assert status["agent"]["lastHeartbeat"]
        assert status["collectorStatus"]["connected"] is True

        # Upgrade under the running agent: the Deployment is patched once, with the new image.
        lab.clear_requests()
        cr = hub.get(CC_API, "clusterconnections", "lab", HUB_NAMESPACE)
        cr["spec"]["collectorVersion"] = "9.9.9"
        hub.update(cr)
        eventually(
            lambda: (
                lab.get("apps/v1", "deployments", "clusterpulse-collector", AGENT_NS)["spec"]["template"]["spec"][
                    "containers"
                ][0]["image"]
                == "quay.io/clusterpulse/clusterpulse:9.9.9"
            ),
            "the Deployment to roll to 9.9.9",
            timeout=WAIT,
        )
        writes = [(m, p) for m, p, _ in lab.requests if m in ("POST", "PUT", "PATCH", "DELETE")]
        assert writes == [("PATCH", f"/apis/apps/v1/namespaces/{AGENT_NS}/deployments/clusterpulse-collector")]
    finally:
        agent.stop()
        client.close()

    hub.delete(CC_API, "clusterconnections", "lab", HUB_NAMESPACE)
    eventually(
        lambda: hub.get(CC_API, "clusterconnections", "lab", HUB_NAMESPACE) is None,
        "the ClusterConnection to go (finalizer " + FINALIZER + ")",
        timeout=WAIT,
    )
    assert lab.get("apps/v1", "deployments", "clusterpulse-collector", AGENT_NS) is None
    assert lab.get("rbac.authorization.k8s.io/v1", "clusterroles", "clusterpulse-collector", None) is None
    assert lab.get("v1", "configmaps", "ingester-ca", AGENT_NS) is None
    assert lab.get("v1", "namespaces", AGENT_NS, None) is None


def _managed_token(lab: Any) -> str:
    found = lab.get("v1", "secrets", "clusterpulse-collector-token", AGENT_NS)
    return base64.b64decode(found["data"]["token"]).decode() if found else ""


def _mount_ca(lab: Any, env: dict[str, str], tmp_path: Path) -> str:
    """Write the CA bundle the hub copied to ``lab`` where the agent reads it (the ConfigMap volume's
    stand-in) and point ``INGESTER_TLS_CA`` there; returns the bundle."""
    bundle = str(lab.get("v1", "configmaps", "ingester-ca", AGENT_NS)["data"]["service-ca.crt"])
    ca_file = tmp_path / "service-ca.crt"
    ca_file.write_text(bundle)
    env["INGESTER_TLS_CA"] = str(ca_file)
    return bundle


def _registers(port: int, token: str, ca: str) -> bool:
    channel = grpc.secure_channel(
        f"127.0.0.1:{port}",
        grpc.ssl_channel_credentials(ca.encode()),
        options=[("grpc.ssl_target_name_override", SERVER_NAME)],
    )
    stream = Stream(port, token, channel)
    try:
        stream.register("lab", token)
        return True
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.UNAUTHENTICATED
        return False
    finally:
        stream.close()


def test_the_agent_gets_a_token_of_its_own_which_rotates_with_a_grace(
    hub: Any, kube_api: Callable[..., Any], manager: tuple[Manager, int], tmp_path: Path
) -> None:
    running, port = manager
    lab = kube_api(objects=managed_objects(), require_token=MANAGED_TOKEN)
    hub.create(secret("lab-token", MANAGED_TOKEN))
    hub.create(cluster_connection("lab", lab.url, push=True, ingester=f"127.0.0.1:{port}"))
    deployment = eventually(
        lambda: lab.get("apps/v1", "deployments", "clusterpulse-collector", AGENT_NS),
        "the hub to create the agent Deployment",
        timeout=WAIT,
    )

    # The managed cluster holds a token the hub minted, not the hub's credential for that cluster.
    first = _managed_token(lab)
    hub_credential = base64.b64decode(hub.get("v1", "secrets", "lab-token", HUB_NAMESPACE)["data"]["token"]).decode()
    minted = hub.get("v1", "secrets", collector_token.secret_name("lab"), HUB_NAMESPACE)
    assert first and first != hub_credential and MANAGED_TOKEN not in first
    assert len(base64.urlsafe_b64decode(first + "=" * (-len(first) % 4))) * 8 >= 256
    assert base64.b64decode(minted["data"]["token"]).decode() == first
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert hub_credential not in json.dumps(deployment)

    def run_agent(token: str, name: str) -> AgentProcess:
        env = {item["name"]: item.get("value", "") for item in container["env"]}
        env["COLLECTOR_TOKEN"] = token
        _mount_ca(lab, env, tmp_path)
        return local_agent(env, lab.write_kubeconfig(tmp_path / "lab.kubeconfig", token=MANAGED_TOKEN), tmp_path, name)

    ca = str(lab.get("v1", "configmaps", "ingester-ca", AGENT_NS)["data"]["service-ca.crt"])
    old_agent = run_agent(first, "agent-1")
    new_agent: AgentProcess | None = None
    try:
        eventually(lambda: agent_connection(running.runtime.plugins, "lab"), "the agent to register", timeout=WAIT)
        template = deployment["spec"]["template"]["metadata"]["annotations"]

        # Rotate with the real command; the grace is the setting under test.
        grace = 2 * WAIT
        hub_config = write_config(
            tmp_path / "rotate.toml",
            ["cluster", "ingester"],
            {},
            core={"kubeconfig": str(hub.write_kubeconfig(tmp_path / "hub.kubeconfig"))},
        )
        rotated = subprocess.run(
            [CLUSTERPULSE, "--config", str(hub_config), "agent", "rotate-token", "lab", "--grace", str(grace)],
            capture_output=True,
            text=True,
            timeout=WAIT * 3,
        )
        assert rotated.returncode == 0, rotated.stderr
        rotated_at = time.monotonic()
        assert "rotated the collector token of lab" in rotated.stdout

        # Within the grace the old token still registers, and the running agent stays connected.
        assert _registers(port, first, ca)
        second = eventually(
            lambda: (t := _managed_token(lab)) != first and t, "the new token on the cluster", timeout=WAIT
        )
        assert second != hub_credential
        rolled = lab.get("apps/v1", "deployments", "clusterpulse-collector", AGENT_NS)
        assert rolled["spec"]["template"]["metadata"]["annotations"] != template  # the pod restarts with it
        assert old_agent.process.poll() is None and agent_connection(running.runtime.plugins, "lab")
        assert time.monotonic() - rotated_at < grace, "the checks above outlasted the grace period"
        new_agent = run_agent(second, "agent-2")  # what the rolled Deployment's pod is

        # After the grace: the old token's stream is ended and the old token refused; the new agent stays.
        eventually(
            lambda: running.runtime.metrics.get_sample_value(
                "clusterpulse_ingester_streams_rejected_total", {"reason": "revoked_token_changed"}
            ),
            "the old token's stream to end after the grace",
            timeout=grace + WAIT,
        )
        old_agent.stop()
        assert not _registers(port, first, ca)
        eventually(lambda: agent_connection(running.runtime.plugins, "lab"), "the new agent", timeout=WAIT)
    finally:
        old_agent.stop()
        if new_agent is not None:
            new_agent.stop()


def test_a_rotated_ca_reaches_the_agent_which_reconnects_and_keeps_pushing(
    hub: Any, kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    """``agent rotate-ca``: the bundle with both CAs reaches the deployed agent's ConfigMap while the old CA still
    issues; after the grace the ingester serves a certificate of the new CA, and the agent, reconnecting after a
    hub restart, verifies it with the bundle it received and keeps pushing. The old bundle alone no longer works."""
    port = free_port()
    check = 0.2  # tls_renew_check_interval: how soon the ingester publishes and switches
    running = start_manager(hub, redis_url, tmp_path / "hub.toml", port, tls_renew_check_interval=check)
    lab = kube_api(objects=managed_objects(), require_token=MANAGED_TOKEN)
    hub.create(secret("lab-token", MANAGED_TOKEN))
    hub.create(cluster_connection("lab", lab.url, push=True, ingester=f"127.0.0.1:{port}"))
    _deployment, env = deployed_env(lab)
    old_bundle = _mount_ca(lab, env, tmp_path)
    (old_ca,) = x509.load_pem_x509_certificates(old_bundle.encode())
    agent = local_agent(env, lab.write_kubeconfig(tmp_path / "lab.kubeconfig", token=MANAGED_TOKEN), tmp_path)
    client = redis.Redis.from_url(redis_url)
    try:
        eventually(lambda: client.get("cluster:lab:metrics"), "a batch from the deployed agent", timeout=WAIT)
        grace = WAIT
        hub_config = write_config(
            tmp_path / "rotate.toml",
            ["cluster", "ingester"],
            {},
            core={"kubeconfig": str(hub.write_kubeconfig(tmp_path / "hub.kubeconfig"))},
        )
        rotated = subprocess.run(
            [CLUSTERPULSE, "--config", str(hub_config), "agent", "rotate-ca", "--grace", str(grace)],
            capture_output=True,
            text=True,
            timeout=WAIT * 3,
        )
        assert rotated.returncode == 0, rotated.stderr
        rotated_at = time.monotonic()

        # Both CAs reach the agent's cluster (the ConfigMap the pod mounts) while the old CA still issues.
        def both() -> str | None:
            bundle = str(lab.get("v1", "configmaps", "ingester-ca", AGENT_NS)["data"]["service-ca.crt"])
            return bundle if len(x509.load_pem_x509_certificates(bundle.encode())) == 2 else None

        bundle = eventually(both, "the new CA bundle on the managed cluster", timeout=WAIT + check)
        new_ca, kept = x509.load_pem_x509_certificates(bundle.encode())
        assert kept == old_ca and new_ca != old_ca
        assert _served_issuer(port) == old_ca.subject
        assert time.monotonic() - rotated_at < grace, "the bundle arrived after the grace"
        Path(env["INGESTER_TLS_CA"]).write_text(bundle)  # the kubelet updates the mounted ConfigMap

        # After the grace the new CA issues the ingester's certificate.
        eventually(
            lambda: _served_issuer(port) == new_ca.subject, "a certificate of the new CA", timeout=grace + WAIT + check
        )
        # The hub restarts: the agent reconnects, verifies the new certificate with its bundle, keeps pushing.
        running.stop()
        client.delete("cluster:lab:metrics")
        running = start_manager(hub, redis_url, tmp_path / "hub-2.toml", port, tls_renew_check_interval=check)
        eventually(lambda: client.get("cluster:lab:metrics"), "a batch after the reconnect", timeout=WAIT)
        assert agent.process.poll() is None
        # The old bundle alone no longer verifies the ingester.
        assert not _verifies(port, old_bundle)
        assert _verifies(port, bundle)
    finally:
        agent.stop()
        client.close()
        running.stop()


def _served_issuer(port: int) -> x509.Name:
    return x509.load_pem_x509_certificate(ssl.get_server_certificate(("127.0.0.1", port)).encode()).issuer


def _verifies(port: int, bundle: str) -> bool:
    context = ssl.create_default_context(cadata=bundle)
    context.check_hostname = False
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=WAIT) as raw,
            context.wrap_socket(raw, server_hostname=SERVER_NAME),
        ):
            return True
    except ssl.SSLCertVerificationError:
        return False
