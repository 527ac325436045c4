"""ClusterConnection reconciles against emulated clusters, stored in a real Redis."""

from __future__ import annotations

import gc
import types
from collections.abc import Callable
from typing import Any

import three_node
from cluster_support import HUB_NAMESPACE, FakeClock, Harness, secret
from clusterpulse_testing.vectors import same_value

from clusterpulse_core.breaker import CircuitBreaker
from clusterpulse_core.kube.client import KubeApiError
from clusterpulse_core.kube.pool import ClientPool
from clusterpulse_core.serde import parse_time


def managed_three_node(kube_api: Callable[..., Any]) -> Any:
    """The three-node OpenShift-like cluster, requiring its bearer token."""
    return kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)


def assert_same(got: Any, want: Any, where: str) -> None:
    """Deep equality with int/float distinguished (same_value), with a readable failure."""
    assert same_value(got, want), f"{where}:\n got {got!r}\nwant {want!r}"


def test_three_node_cluster_every_stored_value(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed_three_node(kube_api)
    harness.add(
        "three",
        cluster.url,
        token=three_node.TOKEN,
        displayName="Three Nodes",
        labels={"env": "test"},
        monitoring={"interval": 45},
    )

    outcome = harness.reconcile("three")

    assert outcome.ok, outcome.detail
    assert outcome.requeue_after == 45
    r = harness.redis
    assert_same(
        harness.json("cluster:three:spec"),
        {
            "displayName": "Three Nodes",
            "endpoint": cluster.url,
            "credentialsRef": {"name": "three-token", "namespace": ""},
            "labels": {"env": "test"},
            "monitoring": {"interval": 45, "timeout": 0},
        },
        "spec",
    )
    assert_same(harness.json("cluster:three:labels"), {"env": "test"}, "labels")
    assert sorted(m.decode() for m in r.smembers("cluster:three:nodes")) == ["cp-0", "worker-0", "worker-1"]
    for name, want in three_node.EXPECTED_NODES.items():
        # The API server sets creationTimestamp itself (docs/compatibility.md#r6: the node value carries it).
        created = cluster.get("v1", "nodes", name)["metadata"]["creationTimestamp"]
        assert_same(
            harness.hash_json(f"cluster:three:node:{name}", "current"),
            {**want, "creation_timestamp": created},
            f"node {name}",
        )
    assert_same(harness.json("cluster:three:metrics"), three_node.EXPECTED_METRICS, "metrics")
    assert_same(
        harness.json("cluster:three:namespaces"),
        {"namespaces": three_node.NAMESPACES, "count": 5, "timestamp": three_node.NOW},
        "namespaces",
    )
    assert sorted(m.decode() for m in r.smembers("cluster:three:namespaces:set")) == three_node.NAMESPACES
    assert_same(harness.json("cluster:three:info"), {**three_node.EXPECTED_INFO, "api_url": cluster.url}, "info")
    csv = cluster.get("operators.coreos.com/v1alpha1", "clusterserviceversions", "cert-manager.v1.13.0", "cert-manager")
    # The API server sets creationTimestamp itself; updated_at comes from status.lastUpdateTime.
    created = csv["metadata"]["creationTimestamp"]
    assert_same(
        harness.json("cluster:three:operators"),
        [{**three_node.EXPECTED_OPERATORS[0], "created_at": created}],
        "operators",
    )
    assert_same(
        harness.json("cluster:three:cluster_operators"), three_node.EXPECTED_CLUSTER_OPERATORS, "cluster operators"
    )
    # One of the three nodes is NotReady (below NODE_UNHEALTHY_THRESHOLD's half): degraded.
    assert_same(
        harness.json("cluster:three:status"),
        {"health": "degraded", "message": "Issues: 1 nodes not ready", "last_check": three_node.NOW},
        "status",
    )
    assert r.sismember("clusters:all", "three")
    [event] = harness.events("three")
    assert_same(
        event,
        {
            "type": "cluster.reconciled",
            "cluster": "three",
            "timestamp": three_node.NOW,
            "data": {
                "health": "degraded",
                "display_name": "Three Nodes",
                "nodes": 3,
                "nodes_ready": 2,
                "namespaces": 5,
            },
        },
        "event",
    )
    status = harness.cr("three")["status"]
    assert_same(
        {k: v for k, v in status.items() if k != "lastSyncTime"},
        {
            "phase": "Connected",
            "health": "degraded",
            "message": "Issues: 1 nodes not ready",
            "nodes": 3,
            "namespaces": 5,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Connected",
                    "message": "Cluster is reachable",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "observedGeneration": 1,
                }
            ],
        },
        "CR status",
    )
    assert parse_time(status["lastSyncTime"]) == harness.clock.now


def test_last_sync_time_moves_on_every_successful_sync(harness: Harness, kube_api: Callable[..., Any]) -> None:
    # Issue 15 (overrides docs/compatibility.md#c10 for the success path): readers judge staleness by lastSyncTime.
    cluster = managed_three_node(kube_api)
    harness.add("three", cluster.url, token=three_node.TOKEN)
    assert harness.reconcile("three").ok
    first_sync = harness.cr("three")["status"]["lastSyncTime"]
    harness.hub.clear_requests()
    harness.clock.advance(30)

    assert harness.reconcile("three").ok

    patches = [r for r in harness.hub.requests if r[0] == "PATCH"]
    assert [p[1] for p in patches] == [
        f"/apis/clusterpulse.io/v1alpha1/namespaces/{HUB_NAMESPACE}/clusterconnections/three/status"
    ]
    status = harness.cr("three")["status"]
    assert status["lastSyncTime"] != first_sync
    assert parse_time(status["lastSyncTime"]) == harness.clock.now


def test_an_error_status_is_patched_only_when_it_changes(harness: Harness) -> None:
    harness.add("down", "http://127.0.0.1:9", token=three_node.TOKEN)
    assert not harness.reconcile("down").ok
    harness.hub.clear_requests()
    harness.clock.advance(30)

    assert not harness.reconcile("down").ok

    assert [r for r in harness.hub.requests if r[0] == "PATCH"] == []
    assert harness.cr("down")["status"]["phase"] == "Error"


def test_pages_are_requested_with_the_page_size(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    harness = make_harness(settings={"page_size": 2})
    cluster = managed_three_node(kube_api)
    harness.add("three", cluster.url, token=three_node.TOKEN)

    assert harness.reconcile("three").ok

    # One sweep of 5 pages: the node pass, whose pages also feed the resource lists (docs/compatibility.md#r3).
    pod_pages = [q for m, p, q in cluster.requests if m == "GET" and p == "/api/v1/pods"]
    assert len(pod_pages) == 5 and all(q["limit"] == "2" for q in pod_pages)
    assert sum(1 for q in pod_pages if "continue" not in q) == 1
    assert len([p for m, p, q in cluster.requests if p == "/api/v1/nodes"]) == 2
    for name, want in three_node.EXPECTED_NODES.items():
        # The API server sets creationTimestamp itself (docs/compatibility.md#r6: the node value carries it).
        created = cluster.get("v1", "nodes", name)["metadata"]["creationTimestamp"]
        assert_same(
            harness.hash_json(f"cluster:three:node:{name}", "current"),
            {**want, "creation_timestamp": created},
            f"node {name}",
        )


def test_operators_are_scanned_only_every_scan_interval(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed_three_node(kube_api)
    harness.add("three", cluster.url, token=three_node.TOKEN)

    def subscription_lists() -> int:
        return sum(1 for _, path, _ in cluster.requests if path.endswith("/subscriptions"))

    assert harness.reconcile("three").ok
    assert subscription_lists() == 1
    harness.redis.delete("cluster:three:operators")
    harness.clock.advance(299)
    assert harness.reconcile("three").ok
    assert subscription_lists() == 1
    assert harness.json("cluster:three:operators") is None
    harness.clock.advance(1)
    assert harness.reconcile("three").ok
    assert subscription_lists() == 2
    assert harness.json("cluster:three:operators")[0]["name"] == "cert-manager.v1.13.0"


def test_plain_kubernetes_cluster_gets_no_openshift_keys(harness: Harness, kube_api: Callable[..., Any]) -> None:
    plain = [obj for obj in three_node.objects() if obj["apiVersion"] in ("v1", "apps/v1")]
    cluster = kube_api(objects=plain, version={"gitVersion": "v1.29.2", "platform": "linux/arm64"}, require_token="t")
    harness.add("plain", cluster.url, token="t")

    assert harness.reconcile("plain").ok

    assert_same(
        harness.json("cluster:plain:info"),
        {"api_url": cluster.url, "version": "v1.29.2", "platform": "linux/arm64", "console_url": cluster.url},
        "info",
    )
    for key in ("operators", "operators_summary", "cluster_operators", "cluster_operators_summary"):
        assert harness.redis.exists(f"cluster:plain:{key}") == 0, key
    assert harness.runtime.pool.breaker("plain").failure_count == 0


def test_a_reconcile_leaves_no_reference_cycles(harness: Harness, kube_api: Callable[..., Any]) -> None:
    """Everything a reconcile made is freed when it returns, without the cyclic collector.

    The optional OpenShift APIs answer 404 on a plain cluster on every reconcile. A 404 handed
    back through the breaker with its traceback formed a cycle (error, traceback, frames, their
    callers' frames) that kept the whole reconcile's data alive until a collection found it.
    """
    plain = [obj for obj in three_node.objects() if obj["apiVersion"] in ("v1", "apps/v1")]
    cluster = kube_api(objects=plain, require_token="t")
    harness.add("plain", cluster.url, token="t")
    assert harness.reconcile("plain").ok  # the first pass makes the client, Events and status

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds stays in gc.garbage to be looked at
    try:
        outcome = harness.reconcile("plain")
        gc.collect()
        errors = [type(o).__name__ for o in gc.garbage if isinstance(o, KubeApiError)]
        frames = sorted(
            {
                f"{o.f_code.co_name} ({o.f_code.co_filename.rsplit('/', 1)[-1]})"
                for o in gc.garbage
                if isinstance(o, types.FrameType) and "clusterpulse" in o.f_code.co_filename
            }
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()

    assert outcome.ok, outcome.detail
    assert (errors, frames) == ([], [])


def test_unreachable_cluster_opens_the_breaker_and_recovers(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    clock = FakeClock()
    harness = make_harness(clock=clock)
    harness.runtime.pool = ClientPool(breaker_factory=lambda: CircuitBreaker(5, 60.0, clock=clock.monotonic))
    cluster = managed_three_node(kube_api)
    harness.add("three", cluster.url, token=three_node.TOKEN, monitoring={"interval": 120})
    cluster.stop()

    for attempt in range(5):
        outcome = harness.reconcile("three")
        assert not outcome.ok and outcome.requeue_after == 60, attempt
        assert outcome.detail.startswith("connection test failed: ")
        assert "circuit breaker is open" not in outcome.detail
    status = harness.cr("three")["status"]
    assert (status["phase"], status["health"]) == ("Error", "unhealthy")
    assert status["message"].startswith("connection test failed: ")
    assert "lastSyncTime" not in status
    stored = harness.json("cluster:three:status")
    assert (stored["health"], stored["message"]) == ("unhealthy", status["message"])
    assert harness.redis.sismember("clusters:all", "three")
    assert harness.events("three") == []

    cluster.restart()
    cluster.clear_requests()
    outcome = harness.reconcile("three")
    assert outcome.detail == "connection test failed: circuit breaker is open"
    assert cluster.requests == []
    assert harness.cr("three")["status"]["message"] == outcome.detail

    clock.advance(61)
    outcome = harness.reconcile("three")
    assert outcome.ok, outcome.detail
    assert outcome.requeue_after == 120
    status = harness.cr("three")["status"]
    assert (status["phase"], status["health"], status["message"]) == (
        "Connected",
        "degraded",
        "Issues: 1 nodes not ready",
    )
    assert harness.json("cluster:three:status")["health"] == "degraded"  # one NotReady node of three


def test_missing_secret_is_an_error_naming_the_secret(harness: Harness) -> None:
    harness.add("lost", "https://10.1.2.3:6443", token=None)

    outcome = harness.reconcile("lost")

    assert not outcome.ok
    assert outcome.requeue_after == 30
    message = harness.cr("lost")["status"]["message"]
    assert message == outcome.detail
    assert f"{HUB_NAMESPACE}/lost-token" in message and "not found" in message
    assert harness.cr("lost")["status"]["phase"] == "Error"
    assert harness.json("cluster:lost:status")["message"] == message
    assert harness.json("cluster:lost:spec")["endpoint"] == "https://10.1.2.3:6443"


def test_secret_without_token_is_an_error_naming_the_secret(harness: Harness) -> None:
    harness.hub.create(secret("empty-token", None, **{"ca.crt": "-----BEGIN CERTIFICATE-----"}))
    harness.add("empty", "https://10.1.2.3:6443", token=None)

    outcome = harness.reconcile("empty")

    assert not outcome.ok
    assert "no token found in secret" in outcome.detail and f"{HUB_NAMESPACE}/empty-token" in outcome.detail
    assert harness.cr("empty")["status"]["phase"] == "Error"


def test_secret_in_another_namespace_is_read_there(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed_three_node(kube_api)
    harness.hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "vault"}})
    harness.hub.create(secret("shared", three_node.TOKEN, namespace="vault"))
    harness.add("three", cluster.url, token=None, credentialsRef={"name": "shared", "namespace": "vault"})

    assert harness.reconcile("three").ok


def test_wrong_token_fails_the_connection_test(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed_three_node(kube_api)
    harness.add("three", cluster.url, token="not-the-token")

    outcome = harness.reconcile("three")

    assert not outcome.ok and outcome.detail.startswith("connection test failed: ")


def test_invalid_specs_are_errors_naming_the_field(harness: Harness) -> None:
    cases = {
        "no-endpoint": ({"credentialsRef": {"name": "x"}}, "spec.endpoint"),
        "no-credentials": ({"endpoint": "https://api.x.example.com:6443"}, "spec.credentialsRef.name"),
        "push-no-ingester": (
            {"endpoint": "https://api.x.example.com:6443", "credentialsRef": {"name": "x"}, "collectionMode": "push"},
            "spec.ingesterAddress",
        ),
        "bad-interval": (
            {
                "endpoint": "https://api.x.example.com:6443",
                "credentialsRef": {"name": "x"},
                "monitoring": {"interval": "soon"},
            },
            "spec.monitoring.interval",
        ),
        "placeholder-endpoint": (
            {"endpoint": "${CLUSTER_URL}", "credentialsRef": {"name": "x"}},
            "spec.endpoint must be an http(s) URL of the API server, got '${CLUSTER_URL}'",
        ),
        "ftp-endpoint": (
            {"endpoint": "ftp://files.example.com", "credentialsRef": {"name": "x"}},
            "spec.endpoint must be an http(s) URL",
        ),
    }
    for name, (spec, field) in cases.items():
        harness.hub.create(
            {
                "apiVersion": "clusterpulse.io/v1alpha1",
                "kind": "ClusterConnection",
                "metadata": {"name": name, "namespace": HUB_NAMESPACE},
                "spec": spec,
            }
        )
        outcome = harness.reconcile(name)
        assert not outcome.ok, name
        assert field in outcome.detail, (name, outcome.detail)
        status = harness.cr(name)["status"]
        assert (status["phase"], status["health"], status["message"]) == ("Error", "unhealthy", outcome.detail)
        assert harness.json(f"cluster:{name}:status")["message"] == outcome.detail


def test_push_mode_is_collected_by_pull(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed_three_node(kube_api)
    harness.add(
        "edge", cluster.url, token=three_node.TOKEN, collectionMode="push", ingesterAddress="hub.example.net:443"
    )

    outcome = harness.reconcile("edge")

    assert outcome.ok, outcome.detail
    assert harness.cr("edge")["status"]["phase"] == "Connected"
    assert harness.json("cluster:edge:metrics")["nodes"] == 3


def test_interval_and_requeue_rules(make_harness: Callable[..., Harness]) -> None:
    harness = make_harness(env={"RECONCILIATION_INTERVAL": "45"})
    specs = {"default": {}, "short": {"monitoring": {"interval": 10}}, "long": {"monitoring": {"interval": 3600}}}
    for name, extra in specs.items():
        harness.add(name, "https://10.1.2.3:6443", token=None, **extra)
    # Every one fails (no Secret): the requeue is min(interval, 60).
    assert {n: harness.reconcile(n).requeue_after for n in specs} == {"default": 45, "short": 30, "long": 60}
    low = make_harness(env={"RECONCILIATION_INTERVAL": "10"})
    assert low.plugin.settings.reconciliation_interval == 30
    assert low.reconcile("default").requeue_after == 30


def test_deletion_removes_state_client_and_scan_time(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed_three_node(kube_api)
    harness.add("three", cluster.url, token=three_node.TOKEN)
    assert harness.reconcile("three").ok
    assert harness.runtime.pool.names() == ["three"]
    assert harness.plugin.reconciler.cluster_state("three")

    outcome = harness.forget("three")

    assert outcome.ok and outcome.detail == "deleted"
    assert harness.redis.keys("cluster:three:*") == []
    assert not harness.redis.sismember("clusters:all", "three")
    assert harness.events("three")[0]["type"] == "cluster.deleted"
    assert harness.events("three")[0]["data"] is None
    assert harness.runtime.pool.names() == []
    assert harness.plugin.reconciler.cluster_state("three") == {}


def test_endpoint_without_scheme_means_https() -> None:
    from clusterpulse_cluster.spec import api_url

    assert api_url("api.c1.example.com:6443") == "https://api.c1.example.com:6443"
    assert api_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
