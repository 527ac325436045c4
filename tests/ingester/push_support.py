"""Shared helpers of the push-mode tests: a small managed cluster, hub objects, configs, gRPC clients."""

from __future__ import annotations

import base64
import importlib.util
import os
import queue
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc
from clusterpulse_model import AgentConnection
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import free_port
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.plugins import PluginHost

HUB_NAMESPACE = "clusterpulse"
CC_API = "clusterpulse.io/v1alpha1"
TOKEN = "push-token-0123456789"
ROOT = Path(__file__).resolve().parents[2]
CLUSTERPULSE = str(Path(sys.executable).parent / "clusterpulse")
#: Bound of every wait: one reconcile against loopback servers, each call of which the manager's
#: ``request_timeout`` bounds; a loaded machine slows it, only a broken path exhausts it.
WAIT = CoreSettings().request_timeout
#: The name the hub's own ingester certificate is verified against (the ingester Service's).
SERVER_NAME = f"clusterpulse-ingester.{HUB_NAMESPACE}.svc"


def hub_ca(hub: Any) -> str:
    """The CA bundle the hub published for agents (TLS on by default, with the hub's own certificates)."""
    found = hub.get("v1", "configmaps", "ingester-ca", HUB_NAMESPACE)
    assert found is not None, "the hub published no ingester CA (ConfigMap ingester-ca)"
    return str(found["data"]["service-ca.crt"])


def hub_tls_channel(hub: Any, port: int) -> grpc.Channel:
    """A test client's channel to the hub's ingester, verifying its certificate for :data:`SERVER_NAME`."""
    return grpc.secure_channel(
        f"127.0.0.1:{port}",
        grpc.ssl_channel_credentials(hub_ca(hub).encode()),
        options=[("grpc.ssl_target_name_override", SERVER_NAME)],
    )


def node(name: str, ready: bool = True, role: str = "worker") -> dict[str, Any]:
    """A node with capacity, allocatable, a Ready condition, addresses and node info."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "creationTimestamp": "2024-12-01T10:00:00Z",
            "labels": {"kubernetes.io/hostname": name, f"node-role.kubernetes.io/{role}": ""},
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "100Gi", "pods": "110"},
            "allocatable": {"cpu": "3500m", "memory": "15Gi", "ephemeral-storage": "96Gi", "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastTransitionTime": "2024-12-01T10:00:30Z",
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.0.{len(name)}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kernelVersion": "5.14.0",
                "osImage": "RHEL CoreOS",
                "containerRuntimeVersion": "cri-o://1.27",
                "kubeletVersion": "v1.27.16",
                "architecture": "amd64",
            },
        },
    }


def pod(
    namespace: str,
    name: str,
    node_name: str,
    phase: str,
    cpu: str = "250m",
    memory: str = "256Mi",
    replicas: int | None = None,
) -> dict[str, Any]:
    """A pod bound to ``node_name`` with one container's requests."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name.split("-")[0]}},
        "spec": {
            "nodeName": node_name,
            "containers": [
                {"name": "c", "image": "example/app:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
        },
        "status": {"phase": phase},
    }


def deployment(namespace: str, name: str, replicas: int) -> dict[str, Any]:
    """A Deployment (MetricSources read ``spec.replicas``)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }


def managed_objects() -> list[dict[str, Any]]:
    """A three-node cluster with pods in several phases, four namespaces and three Deployments."""
    namespaces = ["default", "kube-system", "app-a", "app-b"]
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces
    ]
    objects += [node("cp-0", role="master"), node("worker-1"), node("worker-2", ready=False)]
    objects += [
        pod("app-a", "web-1", "worker-1", "Running"),
        pod("app-a", "web-2", "worker-1", "Running"),
        pod("app-b", "batch-1", "worker-2", "Succeeded", cpu="1"),
        pod("app-b", "api-1", "worker-2", "Pending"),
        pod("kube-system", "dns-1", "cp-0", "Running", cpu="100m", memory="70Mi"),
    ]
    objects += [deployment("app-a", "web", 2), deployment("app-b", "api", 3), deployment("kube-system", "dns", 1)]
    return objects


def secret(name: str, token: str) -> dict[str, Any]:
    """A hub Secret with ``token`` and the CA of the emulators' HTTPS."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": HUB_NAMESPACE},
        "data": {
            "token": base64.b64encode(token.encode()).decode(),
            "ca.crt": base64.b64encode(loopback_ca().ca_pem.encode()).decode(),
        },
    }


def collector_secret(cluster: str, token: str) -> dict[str, Any]:
    """The hub-owned Secret holding ``cluster``'s collector token (what the hub mints, with a known token)."""
    from clusterpulse_model import collector_token

    return collector_token.secret_object(HUB_NAMESPACE, cluster, {collector_token.TOKEN_KEY: token})


def cluster_connection(name: str, endpoint: str, push: bool = False, ingester: str = "") -> dict[str, Any]:
    """A ClusterConnection whose credentials are the Secret ``<name>-token``."""
    spec: dict[str, Any] = {"endpoint": endpoint, "credentialsRef": {"name": f"{name}-token"}}
    if push:
        spec.update(collectionMode="push", ingesterAddress=ingester or "127.0.0.1:1")
    return {
        "apiVersion": CC_API,
        "kind": "ClusterConnection",
        "metadata": {"name": name, "namespace": HUB_NAMESPACE},
        "spec": spec,
    }


def metric_source(name: str, expression: str) -> dict[str, Any]:
    """A MetricSource over Deployments with one computed field ``doubled = <expression>``."""
    return {
        "apiVersion": CC_API,
        "kind": "MetricSource",
        "metadata": {"name": name, "namespace": HUB_NAMESPACE},
        "spec": {
            "source": {"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": {"include": ["app-*"]}},
            "fields": [{"name": "replicas", "path": ".spec.replicas", "type": "integer"}],
            "computed": [{"name": "doubled", "expression": expression, "type": "integer"}],
            "aggregations": [{"name": "total", "field": "doubled", "function": "sum"}],
            "collection": {"intervalSeconds": 30},
            "rbac": {"resourceTypeName": "deployments"},
        },
    }


def write_config(
    path: Path, plugins: Sequence[str], sections: Mapping[str, Mapping[str, Any]], core: Mapping[str, Any] | None = None
) -> Path:
    """A clusterpulse.toml with ``[clusterpulse]`` and ``[plugins.<name>]`` sections."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return repr(v)

    core_values = {
        "namespace": HUB_NAMESPACE,
        "metrics_bind_address": "0",
        "health_probe_bind_address": "0",
        **(core or {}),
    }
    lines = ["[clusterpulse]", "plugins = [" + ", ".join(f'"{p}"' for p in plugins) + "]"]
    lines += [f"{k} = {value(v)}" for k, v in core_values.items()]
    for name, section in sections.items():
        lines.append(f"[plugins.{name}]")
        lines += [f"{k} = {value(v)}" for k, v in section.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


class AgentProcess:
    """``clusterpulse agent`` as a subprocess, its log in a file, its /metrics scraped over HTTP."""

    def __init__(
        self, config: Path, kubeconfig: Path | None, metrics_port: int, log: Path, env: Mapping[str, str] | None = None
    ) -> None:
        """``kubeconfig=None`` runs the agent as in a pod (in-cluster config from ``env``)."""
        self.log = log
        self.metrics_port = metrics_port
        full_env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(
                (
                    "INGESTER_",
                    "COLLECT",
                    "CLUSTER_NAME",
                    "BUFFER_SIZE",
                    "KUBECONFIG",
                    "KUBERNETES_SERVICE_",
                    "SERVICE_ACCOUNT_DIR",
                )
            )
        }
        full_env.update(env or {})
        self._log_file = log.open("w")
        where = ["--kubeconfig", str(kubeconfig)] if kubeconfig is not None else []
        self.process = subprocess.Popen(
            [CLUSTERPULSE, "--config", str(config), "agent", *where],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=config.parent,
        )

    def metric(self, name: str, labels: str = "") -> float:
        """One sample of the agent's /metrics (0 when absent)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as response:
                text = response.read().decode()
        except OSError:
            return -1.0
        pattern = re.escape(name) + (re.escape("{" + labels + "}") if labels else "") + r" ([0-9.e+-]+)"
        found = re.search(r"^" + pattern + r"$", text, re.M)
        return float(found.group(1)) if found else 0.0

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then wait; returns the exit code."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(5)
        self._log_file.close()
        return code

    def output(self) -> str:
        """The agent's log so far."""
        return self.log.read_text()


AGENT_NS = "clusterpulse-system"


def deployed_env(managed: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Wait for the agent Deployment the hub creates on ``managed``: (the Deployment, its container's environment
    with ``COLLECTOR_TOKEN`` read from the token Secret, as the pod gets it)."""
    deployment = eventually(
        lambda: managed.get("apps/v1", "deployments", "clusterpulse-collector", AGENT_NS),
        "the hub to create the agent Deployment",
        timeout=WAIT,
    )
    env = {
        item["name"]: item.get("value", "") for item in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    found = managed.get("v1", "secrets", "clusterpulse-collector-token", AGENT_NS)
    env["COLLECTOR_TOKEN"] = base64.b64decode(found["data"]["token"]).decode()
    return deployment, env


def local_agent(env: Mapping[str, str], kubeconfig: Path | None, tmp_path: Path, name: str = "agent") -> AgentProcess:
    """``clusterpulse agent`` with ``env`` (the Deployment's, in place of its pod; ``kubeconfig`` for its service
    account), collecting every 0.5 s and reporting health every second, its /metrics on a free port."""
    metrics_port = free_port()
    config = write_config(
        tmp_path / f"{name}.toml",
        ["cluster", "metricsource", "ingester"],
        {"ingester": {"collect_interval": 0.5, "heartbeat_interval": 1.0}},
        core={"metrics_bind_address": f"127.0.0.1:{metrics_port}"},
    )
    return AgentProcess(config, kubeconfig, metrics_port, tmp_path / f"{name}.log", env=env)


class Stream:
    """One raw Connect stream driven message by message (a test stand-in for an agent)."""

    def __init__(self, port: int, token: str | None, channel: grpc.Channel | None = None) -> None:
        self.channel = channel or grpc.insecure_channel(f"127.0.0.1:{port}")
        self._requests: queue.Queue[pb.ConnectRequest | None] = queue.Queue()
        metadata = [("authorization", f"Bearer {token}")] if token is not None else []
        self._responses: Iterator[pb.ConnectResponse] = pb_grpc.CollectorServiceStub(self.channel).Connect(
            iter(self._requests.get, None), metadata=metadata, timeout=20
        )

    def send(self, request: pb.ConnectRequest) -> None:
        self._requests.put(request)

    def register(self, cluster: str, token: str, version: str = "test-1") -> pb.ConnectResponse:
        self.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name=cluster, token=token, version=version)))
        return self.recv()

    def recv(self) -> pb.ConnectResponse:
        return next(self._responses)

    def error(self) -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as info:
            while True:
                self.recv()
        return info.value

    def close(self) -> None:
        self._requests.put(None)
        self.channel.close()


async def agent_register(settings: Any, cluster: str = "edge", token: str | None = None) -> pb.ConnectResponse:
    """Register as ``cluster`` (token ``TOKEN + cluster`` unless given) through the agent's own channel code (its
    TLS, server name and client certificate handling, from ``settings``); the first answer."""
    from clusterpulse_ingester.agent.runner import open_channel

    token = TOKEN + cluster if token is None else token
    async with open_channel(settings) as channel:
        call = pb_grpc.CollectorServiceStub(channel).Connect(
            metadata=(("authorization", f"Bearer {token}"),), timeout=WAIT
        )
        await call.write(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name=cluster, token=token)))
        response: pb.ConnectResponse = await call.read()
        call.cancel()
        return response


def ingester_port(runtime: Any) -> int:
    """The port the ingester plugin of ``runtime`` listens on."""
    plugin = runtime.plugins.pm.get_plugin("ingester")
    assert plugin is not None and plugin.server is not None
    return int(plugin.server.port)


def agent_connection(plugins: PluginHost, cluster: str) -> AgentConnection | None:
    """The ingester's answer to ``clusterpulse_agent_connection`` (the hook it declares) for ``cluster``."""
    hook = plugins.hook("clusterpulse_agent_connection")
    assert hook is not None, "the ingester plugin, which declares clusterpulse_agent_connection, is not loaded"
    found: AgentConnection | None = hook(cluster=cluster)
    return found


def upstream_stubs(tmp_path: Path) -> ModuleType:
    """``collector_pb2`` generated from the unmodified upstream listing, as a Go ingester's or Go agent's would be
    (once per process: its descriptors live in the process-wide pool)."""
    from grpc_tools import protoc
    from test_proto_drift import SPEC_LISTING

    if "upstream_collector_pb2" in sys.modules:
        return sys.modules["upstream_collector_pb2"]

    listing = re.search(r"## 3\. Complete interface listing\n\n```proto\n(.*?)```", SPEC_LISTING.read_text(), re.S)
    assert listing is not None
    # Another file name than ours: both descriptors live in one process-wide pool.
    proto = tmp_path / "upstream" / "collector.proto"
    proto.parent.mkdir()
    proto.write_text(listing.group(1).replace("package clusterpulse.collector.v1;", "package upstream.v1;"))
    include = Path(protoc.__file__).resolve().parent / "_proto"
    assert protoc.main(["protoc", f"-I{tmp_path}", f"-I{include}", f"--python_out={tmp_path}", str(proto)]) == 0
    spec = importlib.util.spec_from_file_location("upstream_collector_pb2", tmp_path / "upstream" / "collector_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def workload_objects() -> list[dict[str, Any]]:
    """A Service, a StatefulSet, a DaemonSet and a PVC: what the R1 counts and R3 lists carry beyond pods and
    Deployments (docs/compatibility.md#r1, #r3)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "app-a"},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "ports": [{"port": 80}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "app-b"},
            "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}},
            "status": {"replicas": 1, "readyReplicas": 1},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "logs", "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": {"app": "logs"}}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 3},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "app-b"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    ]


class GoAgent:
    """A Go agent's stream: our agent's collection of its cluster, re-encoded with the stubs of the unmodified
    upstream listing (so only upstream fields travel, as a Go agent sends them), one batch at a time."""

    def __init__(
        self, port: int, cluster: str, token: str, client: Any, config_dir: Path, channel: grpc.Channel | None = None
    ) -> None:
        from clusterpulse_ingester.agent.runner import Agent

        from clusterpulse_core.runtime.bootstrap import load

        config_file = write_config(
            config_dir / f"go-agent-{cluster}.toml",
            ["cluster", "metricsource", "ingester"],
            {"ingester": {"cluster_name": cluster, "collector_token": token, "ingester_address": f"127.0.0.1:{port}"}},
        )
        config, host = load(str(config_file), env={})
        self.upstream = upstream_stubs(config_dir)
        self.agent = Agent(config.plugin("ingester"), host, client)
        self.stream = Stream(port, token, channel)
        self._apply(self.stream.register(cluster, token))

    def _apply(self, response: pb.ConnectResponse) -> None:
        if response.WhichOneof("payload") == "config":
            hook = self.agent.host.hook("clusterpulse_agent_sources")  # declared by the ingester
            assert hook is not None
            hook(sources=list(response.config.metric_sources_json), plugins=self.agent.host)

    def push(self) -> pb.Ack:
        """Collect, send the upstream fields of the batch, and return the hub's ack (config updates applied)."""
        ours = self.agent.collect_once()
        theirs = self.upstream.MetricsBatch.FromString(ours.SerializeToString())
        theirs.DiscardUnknownFields()  # the extension is no field of the upstream listing
        batch = pb.MetricsBatch.FromString(theirs.SerializeToString())
        assert not batch.HasField("clusterpulse") and batch.node_metrics
        self.stream.send(pb.ConnectRequest(metrics=batch))
        while True:
            response = self.stream.recv()
            if response.WhichOneof("payload") == "ack":
                return response.ack
            self._apply(response)

    def close(self) -> None:
        self.stream.close()
        self.agent.close()
