"""Resource lists (docs/compatibility.md#r3) and object counts (docs/compatibility.md#r1)
against the three-node emulated cluster.

The lists are made by the ``nodes`` collector (:class:`InventoryCollector`), their pods taken
from its own pod sweep, so these tests run that collector.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import three_node
from cluster_support import FakeClock, Harness
from clusterpulse_cluster.inventory import COUNTED_PATHS, InventoryCollector
from clusterpulse_cluster.resources import ResourceLists
from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_model.pieces import ClusterMetricsPiece, ResourceCollectionPiece

from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.serde import unstructure

EVERY_POD = sorted((p["metadata"]["namespace"], p["metadata"]["name"], p["status"]["phase"]) for p in three_node.PODS)


def managed(kube_api: Callable[..., Any]) -> Any:
    return kube_api(objects=three_node.objects(), version=three_node.VERSION)


def collect(cluster: Any, **settings: Any) -> dict[str, Any]:
    """One run of the nodes collector with the resource lists and ``settings`` (caps below the config
    minimums are allowed here)."""
    cluster_settings = ClusterSettings(**settings)
    collector = InventoryCollector(
        cluster_settings.page_size, FakeClock(), resources=ResourceLists(cluster_settings, FakeClock())
    )
    target = ClusterTarget("three", cluster.url, KubeClient(cluster.api_client(), name="three", timeout=10))
    [piece] = [p for p in collector(target) if isinstance(p, ResourceCollectionPiece)]
    collection: dict[str, Any] = unstructure(piece.collection)
    return collection


def api_order(cluster: Any) -> list[tuple[str, str]]:
    """Every pod as (namespace, name) in the order the API server lists them."""
    return [
        (p["metadata"]["namespace"], p["metadata"]["name"])
        for p in KubeClient(cluster.api_client(), timeout=10).list_items("/api/v1/pods")
    ]


def test_every_list_with_the_defaults(kube_api: Callable[..., Any]) -> None:
    collection = collect(managed(kube_api))

    # Pods of every phase, the unscheduled one too (upstream left out Succeeded and Failed).
    assert sorted((p["namespace"], p["name"], p["status"]) for p in collection["pods"]) == EVERY_POD
    web = next(p for p in collection["pods"] if p["name"] == "web-1")
    # labels are only copied with collect_resource_labels (and omitted when empty, docs/compatibility.md#r3)
    assert web == {"name": "web-1", "namespace": "shop", "status": "Running", "node": "worker-0"}
    assert sorted((d["namespace"], d["name"], d["replicas"]) for d in collection["deployments"]) == [
        ("openshift-console", "console", 1),
        ("shop", "batch", 1),
        ("shop", "web", 1),
    ]
    assert collection["services"] == [
        {"name": "web", "namespace": "shop", "type": "ClusterIP", "cluster_ip": "10.96.0.10"}
    ]
    assert collection["statefulsets"] == [{"name": "db", "namespace": "shop", "replicas": 2, "ready": 1}]
    assert collection["daemonsets"] == [
        {"name": "node-exporter", "namespace": "kube-system", "desired": 3, "current": 3, "ready": 2}
    ]
    assert collection["truncated"] is False
    assert collection["total_resources"] == len(three_node.PODS) + 3 + 1 + 1 + 1


def test_labels_only_when_asked(kube_api: Callable[..., Any]) -> None:
    labelled = three_node.pod("shop", "tagged-1", "worker-1", "Running", [None])
    labelled["metadata"]["labels"] = {"app": "tagged", "tier": "web"}
    cluster = kube_api(objects=[*three_node.objects(), labelled], version=three_node.VERSION)

    collection = collect(cluster, collect_resource_labels=True, page_size=4)

    assert collection["services"][0]["labels"] == {"app": "web"}
    tagged = next(p for p in collection["pods"] if p["name"] == "tagged-1")
    assert tagged["labels"] == {"app": "tagged", "tier": "web"}
    assert "labels" not in next(p for p in collection["pods"] if p["name"] == "web-1")  # it has none
    assert "labels" not in next(p for p in collect(cluster)["pods"] if p["name"] == "tagged-1")


def test_total_cap_keeps_the_first_pods_and_sets_truncated(kube_api: Callable[..., Any]) -> None:
    cluster = managed(kube_api)
    first_four = api_order(cluster)[:4]
    cluster.clear_requests()

    collection = collect(cluster, max_total_pods=4, page_size=3)

    assert [(p["namespace"], p["name"]) for p in collection["pods"]] == first_four
    assert collection["truncated"] is True
    # The pods are listed once, every page of them (the node tallies need them all).
    pod_pages = [q for m, p, q in cluster.requests if p == "/api/v1/pods"]
    assert len(pod_pages) == -(-len(three_node.PODS) // 3) and all(q["limit"] == "3" for q in pod_pages)


def test_a_pod_count_at_the_total_cap_is_not_truncated(kube_api: Callable[..., Any]) -> None:
    collection = collect(managed(kube_api), max_total_pods=len(three_node.PODS), page_size=3)
    assert len(collection["pods"]) == len(three_node.PODS) and collection["truncated"] is False


def test_per_namespace_cap_sets_truncated(kube_api: Callable[..., Any]) -> None:
    collection = collect(managed(kube_api), max_pods_per_namespace=2)
    by_namespace: dict[str, int] = {}
    for pod in collection["pods"]:
        by_namespace[pod["namespace"]] = by_namespace.get(pod["namespace"], 0) + 1
    assert by_namespace == {"kube-system": 2, "shop": 2}
    assert collection["truncated"] is True


def test_deployment_and_service_caps(kube_api: Callable[..., Any]) -> None:
    collection = collect(managed(kube_api), max_deployments=2, max_services=1)
    assert len(collection["deployments"]) == 2 and len(collection["statefulsets"]) == 1
    assert collection["truncated"] is True  # three deployments, cap two


def test_namespace_filter_leaves_out_kube_namespaces(kube_api: Callable[..., Any]) -> None:
    collection = collect(managed(kube_api), resource_namespace_filter="shop")
    assert {p["namespace"] for p in collection["pods"]} == {"shop"}


def test_the_total_cap_counts_filtered_pods_too(kube_api: Callable[..., Any]) -> None:
    # As upstream's capped listing: the first max_total_pods pods, then the filter.
    cluster = managed(kube_api)
    first_five = api_order(cluster)[:5]
    collection = collect(cluster, resource_namespace_filter="shop", max_total_pods=5, page_size=2)
    assert [(p["namespace"], p["name"]) for p in collection["pods"]] == [
        (ns, name) for ns, name in first_five if not ns.startswith("kube-")
    ]
    assert collection["truncated"] is True


def test_a_reconcile_lists_the_pods_once(make_harness: Callable[..., Harness], kube_api: Callable[..., Any]) -> None:
    harness = make_harness(settings={"page_size": 2})
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("three", cluster.url, token=three_node.TOKEN)

    assert harness.reconcile("three").ok

    # One sweep of the pod pages, each page once, feeding both the node tallies and the pod list.
    pod_pages = [q for m, p, q in cluster.requests if m == "GET" and p == "/api/v1/pods"]
    assert len(pod_pages) == -(-len(three_node.PODS) // 2)
    assert sum(1 for q in pod_pages if "continue" not in q) == 1
    assert len({q.get("continue") for q in pod_pages}) == len(pod_pages)
    assert sorted((p["namespace"], p["name"], p["status"]) for p in harness.json("cluster:three:pods")) == EVERY_POD
    assert harness.json("cluster:three:metrics")["pods"] == len(three_node.PODS)
    totals = {
        name: harness.hash_json(f"cluster:three:node:{name}", "current")["pods_total"]
        for name in three_node.EXPECTED_NODES
    }
    assert totals == {name: want["pods_total"] for name, want in three_node.EXPECTED_NODES.items()}


def test_a_failing_pod_list_fails_the_reconcile(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    cluster.fail(r"^/api/v1/pods$")
    harness.add("three", cluster.url, token=three_node.TOKEN)

    outcome = harness.reconcile("three")

    assert not outcome.ok
    assert "failed to list pods" in harness.json("cluster:three:status")["message"]
    assert not harness.redis.exists("cluster:three:pods")


def test_reconcile_stores_the_lists_and_counts(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("three", cluster.url, token=three_node.TOKEN)

    assert harness.reconcile("three").ok

    pods = harness.json("cluster:three:pods")
    assert sorted((p["namespace"], p["name"], p["status"]) for p in pods) == EVERY_POD
    assert harness.json("cluster:three:resource_metadata")["pods_count"] == len(three_node.PODS)
    for key in ("pods", "deployments", "services", "statefulsets", "daemonsets", "resource_metadata"):
        assert 0 < harness.redis.ttl(f"cluster:three:{key}") <= 600
    metrics = harness.json("cluster:three:metrics")
    assert (metrics["services"], metrics["statefulsets"], metrics["daemonsets"], metrics["pvcs"]) == (1, 1, 1, 1)
    conditions = harness.redis.hgetall("cluster:three:node:cp-0:conditions")
    assert sorted(conditions) == [b"MemoryPressure", b"Ready"]


def test_a_failing_list_never_fails_the_reconcile(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    cluster.fail(r"^/apis/apps/v1/daemonsets$")
    harness.add("three", cluster.url, token=three_node.TOKEN)

    outcome = harness.reconcile("three")

    assert outcome.ok, outcome.detail
    # Reachable and stored: the health is the nodes' (one NotReady of three), not an error.
    assert harness.json("cluster:three:status")["health"] == "degraded"
    assert not harness.redis.exists("cluster:three:resource_metadata")  # the lists failed as a whole
    assert harness.json("cluster:three:metrics")["pods"] == len(three_node.PODS)  # the node pass did not
    metrics = harness.json("cluster:three:metrics")
    assert metrics["daemonsets"] == 0 and metrics["services"] == 1  # an uncountable kind counts 0


def test_collection_can_be_disabled(make_harness: Callable[..., Harness], kube_api: Callable[..., Any]) -> None:
    harness = make_harness(env={"RESOURCE_COLLECTION_ENABLED": "false", "MAX_TOTAL_PODS": "5"})
    assert harness.plugin.settings.max_total_pods == 50  # raised to the upstream minimum
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("three", cluster.url, token=three_node.TOKEN)

    assert harness.reconcile("three").ok
    assert not harness.redis.exists("cluster:three:resource_metadata")
    assert not any(p == "/apis/apps/v1/statefulsets" and q.get("limit") != "1" for _m, p, q in cluster.requests)


def test_count_uses_remaining_item_count_and_pages_without_it(kube_api: Callable[..., Any]) -> None:
    services = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"s{i}", "namespace": "default", "labels": {"tier": "a" if i % 2 else "b"}},
            "spec": {"type": "ClusterIP"},
        }
        for i in range(7)
    ]
    cluster = kube_api(objects=services)
    client = KubeClient(cluster.api_client(), timeout=10)
    cluster.clear_requests()
    assert client.count("/api/v1/services") == 7
    assert [q for _m, p, q in cluster.requests if p == "/api/v1/services"] == [{"limit": "1"}]
    # A selector turns remainingItemCount off: the list is paged through, items only counted.
    assert client.count("/api/v1/services", page_size=2, labelSelector="tier=a") == 3
    assert client.count("/api/v1/persistentvolumeclaims") == 0
    assert client.count("/api/v1/namespaces/default/services", labelSelector="tier=b") == 4


def counts_and_calls(cluster: Any, **settings: Any) -> tuple[dict[str, int], dict[str, list[str]]]:
    """The cluster-wide counts of one nodes-collector run with the resource lists, and the
    ``limit`` of every call to each counted kind's list."""
    cluster_settings = ClusterSettings(**settings)
    collector = InventoryCollector(
        cluster_settings.page_size, FakeClock(), resources=ResourceLists(cluster_settings, FakeClock())
    )
    target = ClusterTarget("three", cluster.url, KubeClient(cluster.api_client(), name="three", timeout=10))
    [metrics] = [p.metrics for p in collector(target) if isinstance(p, ClusterMetricsPiece)]
    counts = {what: getattr(metrics, what) for what in COUNTED_PATHS}
    calls = {
        what: [q.get("limit", "") for _m, p, q in cluster.requests if p == path] for what, path in COUNTED_PATHS.items()
    }
    return counts, calls


def test_a_list_read_to_its_end_gives_its_count_without_a_call(kube_api: Callable[..., Any]) -> None:
    counts, calls = counts_and_calls(managed(kube_api))

    assert counts == {"deployments": 3, "services": 1, "statefulsets": 1, "daemonsets": 1, "pvcs": 1}
    # One list call each (no limit=1 count call); the PVCs have no list, so they are counted.
    limit = str(ClusterSettings().page_size)
    assert calls == {
        "deployments": [str(ClusterSettings().max_deployments)],
        "services": [limit],
        "statefulsets": [str(ClusterSettings().max_deployments)],
        "daemonsets": ["100"],
        "pvcs": ["1"],
    }


def test_a_list_cut_by_its_cap_is_counted_by_a_call(kube_api: Callable[..., Any]) -> None:
    counts, calls = counts_and_calls(managed(kube_api), max_deployments=2)

    assert counts["deployments"] == 3  # all of them, not the two listed
    assert calls["deployments"] == ["2", "1"]  # the capped list, then the count
    assert calls["services"] == [str(ClusterSettings().page_size)]
