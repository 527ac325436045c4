"""The plugin's declarations, a third-party collector, and the demo fleet fixture data."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from string import Template
from typing import Any

import attrs
import yaml
from cluster_support import Harness
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.plugin import ClusterPlugin
from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_demo.fleet import FLEET_DIR, ca_variables
from clusterpulse_testing.recording import RecordingBackend

from clusterpulse_core import hookimpl
from clusterpulse_core.collect import ClusterTarget, Collector
from clusterpulse_core.config import build_settings
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.pieces import Piece
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import reconcile_once
from clusterpulse_core.store import StorageBackend

FLEET = FLEET_DIR


def test_cluster_connection_kind_matches_the_crd_spec() -> None:
    host = PluginHost(["cluster"])
    owner, kind = host.kinds["ClusterConnection"]
    assert owner == "cluster" and kind == CLUSTER_CONNECTION and kind.reconciler is not None
    assert (kind.group, kind.version, kind.plural, kind.singular, kind.short_names, kind.namespaced) == (
        "clusterpulse.io",
        "v1alpha1",
        "clusterconnections",
        "clusterconnection",
        ("cc",),
        True,
    )
    assert kind.status_subresource and kind.workers == 10
    assert [(c.name, c.type, c.json_path) for c in kind.printer_columns] == [
        ("Display Name", "string", ".spec.displayName"),
        ("Endpoint", "string", ".spec.endpoint"),
        ("Status", "string", ".status.phase"),
        ("Health", "string", ".status.health"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    spec = kind.schema["properties"]["spec"]
    assert spec["required"] == ["endpoint", "credentialsRef"]
    assert set(spec["properties"]) == {
        "displayName",
        "endpoint",
        "credentialsRef",
        "labels",
        "monitoring",
        "collectionMode",
        "ingesterAddress",
        "collectorVersion",
    }
    assert spec["properties"]["collectionMode"] == {
        "type": "string",
        "enum": ["pull", "push"],
        "default": "pull",
        "description": "How data is collected.",
    }
    assert spec["properties"]["credentialsRef"]["required"] == ["name"]
    assert spec["properties"]["monitoring"]["properties"]["interval"]["format"] == "int32"
    # String values (the spec's CRD), bounded as issue 27 asks (docs/faults.md#malformed-resources).
    assert spec["properties"]["labels"]["additionalProperties"] == {"type": "string", "maxLength": 1024}
    assert spec["properties"]["labels"]["maxProperties"] == 64
    monitoring = spec["properties"]["monitoring"]["properties"]
    assert (monitoring["interval"]["minimum"], monitoring["interval"]["maximum"]) == (0, 86_400)
    assert (monitoring["timeout"]["minimum"], monitoring["timeout"]["maximum"]) == (0, 3_600)
    assert spec["properties"]["endpoint"]["maxLength"] == 2048
    status = kind.schema["properties"]["status"]["properties"]
    assert set(status) == {
        "phase",
        "lastSyncTime",
        "health",
        "message",
        "nodes",
        "namespaces",
        "collectorStatus",
        "conditions",
        "agent",
    }  # conditions: issue 15; agent: issue 11
    assert status["lastSyncTime"]["format"] == "date-time"
    assert status["collectorStatus"]["required"] == ["connected"]


def test_settings_env_overrides_and_minimums() -> None:
    env = {"RECONCILIATION_INTERVAL": "12", "OPERATOR_SCAN_INTERVAL": "90", "CONNECT_TIMEOUT": "2"}
    settings = build_settings(ClusterSettings, {}, "plugins.cluster", env)
    assert settings == ClusterSettings(reconciliation_interval=30, operator_scan_interval=90, connect_timeout=5)
    defaults = build_settings(ClusterSettings, {}, "plugins.cluster", {"RECONCILIATION_INTERVAL": "x"})
    assert (
        defaults.reconciliation_interval,
        defaults.operator_scan_interval,
        defaults.connect_timeout,
        defaults.page_size,
    ) == (30, 300, 10, 500)


@attrs.frozen
class IngressesPiece(Piece):
    """What the test collector contributes: the names of a cluster's Ingresses."""

    cluster: str
    names: tuple[str, ...]


class IngressPlugin:
    """A third-party plugin: one collector and one storage backend, no change to the cluster plugin."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.backend = RecordingBackend()

    @hookimpl
    def clusterpulse_collectors(self) -> Sequence[Collector]:
        """List Ingresses on every reconciled cluster."""

        def collect(target: ClusterTarget) -> list[Piece]:
            listing = target.client.get("/apis/networking.k8s.io/v1/ingresses")
            return [IngressesPiece(target.name, tuple(i["metadata"]["name"] for i in listing["items"]))]

        return [Collector("ingresses", collect)]

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[StorageBackend]:
        """The recording backend."""
        return [self.backend]


def ingress(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "web"},
        "spec": {"rules": [{"host": f"{name}.example.com"}]},
    }


def test_a_third_party_collector_adds_a_piece_to_every_cluster(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    extra = IngressPlugin()
    harness = make_harness(extra={"ingresses": extra})
    web = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}
    first = kube_api(objects=[web, ingress("shop"), ingress("blog")], require_token="a")
    second = kube_api(objects=[web, ingress("docs")], require_token="b")
    harness.add("first", first.url, token="a")
    harness.add("second", second.url, token="b")

    assert all(outcome.ok for outcome in reconcile_once(harness.runtime))

    found = {p.cluster: p.names for p in extra.backend.pieces if isinstance(p, IngressesPiece)}
    assert found == {"first": ("blog", "shop"), "second": ("docs",)}
    assert harness.json("cluster:first:metrics")["namespaces"] == 1


def load_fleet(kube_api: Callable[..., Any], harness: Harness) -> dict[str, Any]:
    """Serve every fleet cluster from its folder and apply the hub objects with the URLs filled in."""
    fleet = yaml.safe_load((FLEET / "fleet.yaml").read_text())
    urls = ca_variables()
    for cluster in fleet["clusters"]:
        api = kube_api(version=cluster["version"], require_token=cluster["token"])
        api.load_dir(FLEET / cluster["objects"])
        urls[cluster["urlVariable"]] = api.url
    for path in sorted((FLEET / fleet["hub"]["objects"]).glob("*.yaml")):
        text = Template(path.read_text()).substitute(urls)
        # The hub here serves ClusterConnections only (the demo's MetricSource and access policies
        # belong to their plugins).
        objects = [
            doc
            for doc in yaml.safe_load_all(text)
            if doc and doc["kind"] not in {"MetricSource", "MonitorAccessPolicy"}
        ]
        harness.hub.seed(
            [
                o
                for o in objects
                if not harness.hub.get(
                    o["apiVersion"], o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")
                )
            ]
        )
    return fleet


def test_demo_fleet_reconciles(harness: Harness, kube_api: Callable[..., Any]) -> None:
    fleet = load_fleet(kube_api, harness)
    assert {c["name"] for c in fleet["clusters"]} == {"ocp-prod-east", "k8s-staging", "edge-lab"}

    outcomes = reconcile_once(harness.runtime)

    assert [(o.ref.name, o.ok, o.detail) for o in outcomes] == [
        ("edge-lab", True, ""),
        ("k8s-staging", True, ""),
        ("ocp-prod-east", True, ""),
    ]
    ocp_info = harness.json("cluster:ocp-prod-east:info")
    assert (ocp_info["platform"], ocp_info["version"], ocp_info["console_url"]) == (
        "OpenShift",
        "4.14.33",
        "https://console-openshift-console.apps.ocp-prod-east.example.net",
    )
    summary = harness.json("cluster:ocp-prod-east:cluster_operators_summary")
    assert summary["total"] == 9 and summary["degraded"] == 1 and summary["has_issues"] is True
    ocp_operators = {o["name"]: o for o in harness.json("cluster:ocp-prod-east:operators")}
    assert set(ocp_operators) == {
        "cert-manager-operator.v1.13.0",
        "cluster-logging.v5.9.2",
        "strimzi-cluster-operator.v0.41.0",
    }
    assert ocp_operators["strimzi-cluster-operator.v0.41.0"]["available_in_namespaces"] == ["*"]
    assert ocp_operators["cluster-logging.v5.9.2"]["available_in_namespaces"] == ["openshift-logging"]
    ocp = harness.json("cluster:ocp-prod-east:metrics")
    assert (ocp["nodes"], ocp["nodes_ready"], ocp["namespaces"], ocp["deployments"]) == (6, 6, 21, 10)
    staging_nodes = {
        n.decode(): harness.hash_json(f"cluster:k8s-staging:node:{n.decode()}", "current")
        for n in harness.redis.smembers("cluster:k8s-staging:nodes")
    }
    assert {name: node["status"] for name, node in staging_nodes.items()} == {
        "staging-cp-1": "Ready",
        "staging-worker-1": "Ready",
        "staging-worker-2": "SchedulingDisabled",
        "staging-worker-3": "NotReady",
    }
    preview = staging_nodes["staging-worker-1"]
    assert preview["pods_pending"] == 1 and preview["pods_running"] == 8
    assert harness.json("cluster:k8s-staging:info")["version"] == "v1.29.4"
    assert harness.redis.exists("cluster:k8s-staging:cluster_operators") == 0
    assert len(harness.json("cluster:k8s-staging:operators")) == 1
    edge = harness.json("cluster:edge-lab:info")
    assert (edge["version"], edge["platform"]) == ("v1.30.2+k3s1", "linux/arm64")
    for name in ("ocp-prod-east", "k8s-staging", "edge-lab"):
        assert harness.cr(name)["status"]["phase"] == "Connected"
    assert "CLUSTER_OCP_PROD_EAST_URL" in (FLEET / "hub" / "clusterconnections.yaml").read_text()
    assert os.path.isdir(FLEET / "clusters" / "ocp-prod-east")


class ThreadRecorder:
    """Two collectors that record the threads they run on (one of them at least runs in the pool: the
    first collector of a reconcile runs on the reconcile's own thread)."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    @hookimpl
    def clusterpulse_collectors(self) -> Sequence[Collector]:
        def collect(target: ClusterTarget) -> list[Piece]:
            self.threads.append(threading.current_thread())
            return []

        return [Collector("threads-a", collect), Collector("threads-b", collect)]


def test_reconciles_share_one_collector_pool(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    recorder = ThreadRecorder()
    harness = make_harness(extra={"threads": recorder})
    api = kube_api(require_token="t")
    harness.add("one", api.url, token="t")
    pool = harness.plugin.reconciler.executor()
    before = set(threading.enumerate())
    for _ in range(4):
        assert harness.reconcile("one").ok
    assert harness.plugin.reconciler.executor() is pool
    assert len(recorder.threads) == 8
    # Every reconcile ran its collectors on its own thread or on the threads of the one pool (named
    # "collect"), which grew no further than one reconcile needs: a pool per reconcile would have
    # made new threads each time.
    made = {t for t in threading.enumerate() if t not in before and t.name.startswith("collect")}
    pooled = {t for t in recorder.threads if t is not threading.current_thread()}
    assert pooled, "no collector ran in the pool"
    assert pooled <= made
    assert len(made) <= len(harness.runtime.plugins.collectors())


def test_the_agent_collects_what_the_protocol_extension_carries(kube_api: Callable[..., Any]) -> None:
    # Services, statefulsets, daemonsets, PVCs and the resource lists travel in the protocol
    # extension (docs/push-mode.md#protocol-extension): the agent collects them as the hub does.
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "capacity": {"cpu": "4"}},
    }
    services = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}", "namespace": "default"}} for i in range(3)
    ]
    cluster = kube_api(
        objects=[node, *services, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]
    )
    plugin = ClusterPlugin()
    counted = (
        "/api/v1/services",
        "/apis/apps/v1/statefulsets",
        "/apis/apps/v1/daemonsets",
        "/api/v1/persistentvolumeclaims",
    )
    seen: dict[str, set[str]] = {}
    metrics: dict[str, Any] = {}
    client = KubeClient(cluster.api_client(), name="c1", timeout=10)
    try:
        for where in ("hub", "agent"):
            cluster.clear_requests()
            target = ClusterTarget("c1", cluster.url, client)
            pieces = [p for c in plugin.clusterpulse_collectors(where=where) for p in c.collect(target)]
            seen[where] = {path for _, path, _ in cluster.requests}
            metrics[where] = next(p.metrics for p in pieces if type(p).__name__ == "ClusterMetricsPiece")
    finally:
        client.close()
    assert set(counted) <= seen["hub"]
    assert set(counted) <= seen["agent"]
    assert "/apis/apps/v1/deployments" in seen["agent"] and "/api/v1/nodes" in seen["agent"]
    assert (metrics["hub"].services, metrics["agent"].services) == (3, 3)
    assert metrics["agent"].nodes == metrics["hub"].nodes == 1
