"""Count bounds of a pull collection: a cluster over ``max_nodes`` / ``max_list_objects`` is stored
truncated, and its status, its stored metrics and ``clusterpulse_collection_skipped`` say so.

The bounds under test are the settings (50 nodes, 10 objects per list) against a cluster a little
over them; the memory and Redis figures at full scale (300,000 nodes) are in
``benchmarks/bench_count_bounds.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
from clusterpulse_testing.hostile import HostileProxy
from fault_support import CC_API, HUB_NAMESPACE, TOKEN, add_cluster, make_hub, node, olm_objects, write_config

from clusterpulse_core.kube.client import KubeClient, make_api_client
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins

MAX_NODES = 50
MAX_LIST_OBJECTS = 10
NODES = 60
EXTRA_NAMESPACES = 12
SUBSCRIPTIONS = 12
OLM = "operators.coreos.com/v1alpha1"


def _subscription(index: int) -> list[dict[str, Any]]:
    name, csv = f"op-{index:02d}", f"op-{index:02d}.v1.0.0"
    return [
        {
            "apiVersion": OLM,
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": "operators"},
            "spec": {"name": name},
            "status": {"installedCSV": csv},
        },
        {
            "apiVersion": OLM,
            "kind": "ClusterServiceVersion",
            "metadata": {"name": csv, "namespace": "operators"},
            "spec": {"displayName": name, "version": "1.0.0"},
            "status": {"phase": "Succeeded"},
        },
    ]


def _managed_cluster() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [crd for crd in olm_objects() if crd["kind"] == "CustomResourceDefinition"]
    objects += [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{i:02d}"}} for i in range(EXTRA_NAMESPACES)
    ]
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "operators"}})
    objects += [node(f"node-{i:03d}") for i in range(NODES)]
    # A pod on a node past the bound: counted in the cluster's pods, on no stored node.
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "far", "namespace": "ns-00"},
            "spec": {"nodeName": f"node-{NODES - 1:03d}", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"},
        }
    )
    for i in range(SUBSCRIPTIONS):
        objects += _subscription(i)
    return objects


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == kind), None)


@pytest.fixture
def bounded(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Any:
    hub = make_hub(kube_api)
    cluster = kube_api(objects=_managed_cluster(), require_token=TOKEN)
    add_cluster(hub, "big", cluster.url)
    config_path = write_config(
        tmp_path / "config.toml",
        redis_url,
        plugins={"cluster": {"max_nodes": MAX_NODES, "max_list_objects": MAX_LIST_OBJECTS, "page_size": 7}},
    )
    config, host = load(str(config_path), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    start_plugins(runtime)
    owner, kind = runtime.plugins.kinds["ClusterConnection"]

    def reconcile() -> dict[str, Any]:
        obj = hub.get(CC_API, kind.plural, "big", HUB_NAMESPACE)
        outcome = reconcile_object(runtime, owner, kind, obj)
        assert outcome.ok, outcome.detail
        return dict(hub.get(CC_API, kind.plural, "big", HUB_NAMESPACE)["status"])

    try:
        yield runtime, cluster, client, reconcile
    finally:
        stop_plugins(runtime)
        client.close()


def test_a_cluster_over_the_bounds_is_stored_truncated_and_says_so(bounded: Any) -> None:
    runtime, cluster, client, reconcile = bounded
    status = reconcile()

    def skipped(what: str, reason: str) -> float | None:
        return runtime.metrics.get_sample_value(
            "clusterpulse_collection_skipped", {"cluster": "big", "what": what, "reason": reason}
        )

    members = client.smembers("cluster:big:nodes")
    metrics = json.loads(client.get("cluster:big:metrics") or "{}")
    namespaces = json.loads(client.get("cluster:big:namespaces") or "{}")["namespaces"]
    operators = json.loads(client.get("cluster:big:operators") or "[]")
    truncated = _condition(status, "Truncated")
    stored_status = json.loads(client.get("cluster:big:status") or "{}")
    print(
        f"\nnodes stored {len(members)} of {NODES} (max {MAX_NODES}); namespaces {len(namespaces)}; "
        f"operators {len(operators)}; condition {truncated}; redis status {stored_status.get('message')!r}"
    )
    assert members == {f"node-{i:03d}" for i in range(MAX_NODES)}
    assert metrics["nodes"] == MAX_NODES and metrics["nodes_ready"] == MAX_NODES
    assert metrics["pods"] == 1  # the pod on a node past the bound still counts in the cluster
    assert all(
        json.loads(client.hget(f"cluster:big:node:node-{i:03d}", "current") or "{}")["pods_total"] == 0
        for i in range(MAX_NODES)
    )
    assert len(namespaces) == MAX_LIST_OBJECTS and metrics["namespaces"] == MAX_LIST_OBJECTS
    assert len(operators) == MAX_LIST_OBJECTS
    assert status["nodes"] == MAX_NODES and status["namespaces"] == MAX_LIST_OBJECTS
    assert status["phase"] == "Connected"
    all_namespaces = EXTRA_NAMESPACES + 1
    assert truncated is not None and truncated["status"] == "True" and truncated["reason"] == "CountLimit"
    for phrase in (
        f"stored {MAX_NODES} of {NODES} nodes ({NODES - MAX_NODES} skipped: over max_nodes ({MAX_NODES}))",
        f"stored {MAX_LIST_OBJECTS} of {all_namespaces} namespaces",
        f"stored {MAX_LIST_OBJECTS} of {SUBSCRIPTIONS} operator subscriptions",
    ):
        assert phrase in truncated["message"]
        assert phrase in stored_status["message"]
    assert skipped("nodes", f"over max_nodes ({MAX_NODES})") == NODES - MAX_NODES
    assert skipped("namespaces", f"over max_list_objects ({MAX_LIST_OBJECTS})") == all_namespaces - MAX_LIST_OBJECTS
    assert (
        skipped("operator subscriptions", f"over max_list_objects ({MAX_LIST_OBJECTS})")
        == SUBSCRIPTIONS - MAX_LIST_OBJECTS
    )

    # Back under the node bound: the nodes' report goes, the namespaces' stays.
    for i in range(MAX_NODES - 5, NODES):
        cluster.delete("v1", "nodes", f"node-{i:03d}")
    status = reconcile()
    truncated = _condition(status, "Truncated")
    assert len(client.smembers("cluster:big:nodes")) == MAX_NODES - 5
    assert skipped("nodes", f"over max_nodes ({MAX_NODES})") is None
    assert truncated is not None and "nodes" not in truncated["message"]
    assert f"stored {MAX_LIST_OBJECTS} of {all_namespaces} namespaces" in truncated["message"]


def test_a_server_that_ignores_limit_costs_no_more_than_the_bound(kube_api: Callable[..., Any]) -> None:
    """One page with every item (``limit`` ignored): only ``cap`` items are decoded, the rest counted."""
    items = [node(f"n-{i:03d}") for i in range(NODES)]
    body = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items}).encode()
    decoded: list[Any] = []

    def decode(raw: Any) -> Any:
        decoded.append(raw)
        return json.loads(bytes(raw))

    with HostileProxy(kube_api().url) as proxy:
        proxy.respond(r"^/api/v1/nodes", 200, body)
        client = KubeClient(make_api_client(proxy.url, ca_pem=proxy.ca_pem))
        listed = client.list_capped("/api/v1/nodes", decode, MAX_NODES, limit=7)
    print(f"\none page of {NODES} nodes, cap {MAX_NODES}: {len(decoded)} decoded, {listed.skipped} counted")
    assert len(listed.items) == MAX_NODES and len(decoded) == MAX_NODES
    assert listed.total == NODES and listed.skipped == NODES - MAX_NODES
    assert [item["metadata"]["name"] for item in listed.items] == [f"n-{i:03d}" for i in range(MAX_NODES)]


def test_a_list_past_the_cap_is_counted_without_remaining_item_count(kube_api: Callable[..., Any]) -> None:
    """Paged (7 a page) to the cap, then counted from ``remainingItemCount``; equal to paging through."""
    cluster = kube_api(objects=[node(f"n-{i:03d}") for i in range(NODES)])
    client = KubeClient(cluster.api_client())
    paged = client.list_capped("/api/v1/nodes", lambda raw: json.loads(bytes(raw)), MAX_NODES, limit=7)
    assert len(paged.items) == MAX_NODES and paged.total == NODES
    # A label selector disables remainingItemCount: the rest is paged through, only counted.
    selected = client.list_capped(
        "/api/v1/nodes", lambda raw: json.loads(bytes(raw)), MAX_NODES, limit=7, labelSelector="kubernetes.io/hostname"
    )
    assert len(selected.items) == MAX_NODES and selected.total == NODES
