"""Our Redis as the ClusterPulse API reads it: one test per key the readers read (docs/compatibility.md#readers).

One real reconcile of the demo fleet (the real Manager, plugins, emulated clusters, a real
docker-registry and a real redis-server) fills Redis once for the module. Each test then
reads the keys its endpoint reads, the way that endpoint reads them (the same commands, the
same JSON decoding, the same defaults), and checks the fields readers use: their JSON types
and their values, worked out independently from the demo fleet's YAML. The "filtered
metrics" the Python API recomputes from the resource lists must agree with the stored totals.
"""

from __future__ import annotations

import fnmatch
import functools
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import msgspec
import pytest
import redis
import yaml
from clusterpulse_demo.fleet import FLEET_DIR
from clusterpulse_demo.run import run_demo
from clusterpulse_model import ClusterMetrics, cluster_health
from clusterpulse_testing.servers import redis_process, require_binary

from clusterpulse_core.serde import parse_time

CLUSTERS = ("edge-lab", "k8s-staging", "ocp-prod-east")
#: The demo MetricSource and its resourceTypeName.
SOURCE_ID, RESOURCE_TYPE = "clusterpulse/pod-phases", "pods"
#: docs/compatibility.md#r1: the 24 fields of ``cluster:<c>:metrics`` and their JSON types.
METRIC_TYPES: dict[str, type] = {
    "timestamp": str,
    "nodes": int,
    "nodes_ready": int,
    "nodes_not_ready": int,
    "namespaces": int,
    "pods": int,
    "pods_running": int,
    "pods_pending": int,
    "pods_failed": int,
    "cpu_capacity": float,
    "cpu_allocatable": float,
    "cpu_requested": float,
    "cpu_usage_percent": float,
    "memory_capacity": int,
    "memory_allocatable": int,
    "memory_requested": int,
    "memory_usage_percent": float,
    "storage_capacity": int,
    "storage_used": int,
    "pvcs": int,
    "services": int,
    "deployments": int,
    "statefulsets": int,
    "daemonsets": int,
}
#: The node sums the Python API recomputes over the visible nodes (services/metrics.py).
NODE_SUMS = (
    "cpu_capacity",
    "cpu_allocatable",
    "cpu_requested",
    "memory_capacity",
    "memory_allocatable",
    "memory_requested",
    "storage_capacity",
)
RESOURCE_LISTS = ("pods", "deployments", "services", "statefulsets", "daemonsets")


# ---------------------------------------------------------------------------- the demo fleet's facts


@functools.cache
def _cluster_documents(cluster: str) -> tuple[dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    seeded = tuple(
        doc
        for path in sorted((FLEET_DIR / "clusters" / cluster).glob("*.yaml"))
        for doc in yaml.load_all(path.read_text(), Loader=loader)
        if doc
    )
    return seeded + (_AGENT_OBJECTS if _push_mode(cluster) else ())


#: What the hub installs on a push-mode cluster and the collectors count (docs/agent-deploy.md).
_AGENT_OBJECTS: tuple[dict[str, Any], ...] = (
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "clusterpulse-system"}},
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "clusterpulse-collector", "namespace": "clusterpulse-system"},
        "spec": {"replicas": 1},
    },
)


def _push_mode(cluster: str) -> bool:
    text = (FLEET_DIR / "hub" / "clusterconnections.yaml").read_text()
    return any(
        doc and doc["metadata"]["name"] == cluster and doc["spec"].get("collectionMode") == "push"
        for doc in yaml.safe_load_all(text)
    )


def fixture_objects(cluster: str, kind: str) -> list[dict[str, Any]]:
    """Every object of ``kind`` the demo seeds into ``cluster``."""
    return [doc for doc in _cluster_documents(cluster) if doc.get("kind") == kind]


def connection_labels(cluster: str) -> dict[str, str]:
    """``spec.labels`` of the cluster's ClusterConnection in the hub samples."""
    text = (FLEET_DIR / "hub" / "clusterconnections.yaml").read_text()
    for doc in yaml.safe_load_all(text):
        if doc and doc["metadata"]["name"] == cluster:
            return dict(doc["spec"].get("labels") or {})
    raise AssertionError(f"no ClusterConnection {cluster}")


def node_ready(node: dict[str, Any]) -> bool:
    """Ready (True) and not cordoned, as the node status rule says."""
    ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
    return bool(ready) and ready[-1]["status"] == "True" and not node.get("spec", {}).get("unschedulable")


def expected_health(cluster: str) -> tuple[str, str]:
    """R7 from the fixture's nodes (the demo fleet's requests stay below the CPU and memory thresholds);
    a cordoned node whose Ready condition is True is not "not ready" (docs/compatibility.md#r8)."""
    nodes = fixture_objects(cluster, "Node")
    cordoned = sum(1 for n in nodes if n.get("spec", {}).get("unschedulable") and node_ready({**n, "spec": {}}))
    verdict = cluster_health(
        ClusterMetrics(
            nodes=len(nodes),
            nodes_ready=sum(map(node_ready, nodes)),
            nodes_not_ready=sum(not node_ready(n) for n in nodes),
            nodes_cordoned=cordoned,
        )
    )
    return verdict.health, verdict.message


def phases(cluster: str) -> Counter[str]:
    """Pods of the cluster by phase, every pod."""
    return Counter(p.get("status", {}).get("phase", "") for p in fixture_objects(cluster, "Pod"))


# ---------------------------------------------------------------------------- Redis, read as the API does


@pytest.fixture(scope="module")
def client() -> Iterator[redis.Redis]:
    """A redis-server filled by two cycles of the demo (``decode_responses``, as the Python API)."""
    server = redis_process(require_binary("redis-server", "redis-server"))
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    # Pull data for every cluster: a push agent's batches carry less (no conditions, resource lists,
    # object counts or node age; docs/push-mode.md), so edge-lab is collected by pull here (C3).
    run_demo(2, url, echo=lambda _line: None, push_agents=False)
    reader = redis.Redis.from_url(url, decode_responses=True)
    yield reader
    reader.close()
    server.cleanup()


def get_json(client: redis.Redis, key: str) -> Any:
    """``GET`` and JSON-decode (None when missing), as both APIs do."""
    raw = client.get(key)
    return None if raw is None else msgspec.json.decode(raw)


def assert_types(value: dict[str, Any], types: dict[str, type], where: str) -> None:
    """Every field present with its JSON type (ints are not floats, floats are not ints, no bools)."""
    for field, expected in types.items():
        assert field in value, f"{where}: no {field}"
        got = value[field]
        assert type(got) is expected, f"{where}.{field}: {type(got).__name__} {got!r}, want {expected.__name__}"


def cluster_nodes(client: redis.Redis, cluster: str) -> list[dict[str, Any]]:
    """``SMEMBERS cluster:<c>:nodes`` then ``HGET ... current`` each; members without a hash skipped."""
    nodes = []
    for name in sorted(client.smembers(f"cluster:{cluster}:nodes")):
        current = client.hget(f"cluster:{cluster}:node:{name}", "current")
        if current is not None:
            nodes.append(msgspec.json.decode(current))
    return nodes


def namespaces(client: redis.Redis, cluster: str) -> list[str]:
    """``cluster:<c>:namespaces``, else (missing or empty) the set, as the Python API does."""
    stored = get_json(client, f"cluster:{cluster}:namespaces") or {}
    return list(stored.get("namespaces") or []) or sorted(client.smembers(f"cluster:{cluster}:namespaces:set"))


def resource_lists(client: redis.Redis, cluster: str) -> dict[str, list[dict[str, Any]]]:
    """The R3 lists (a missing key reads as an empty list)."""
    return {kind: get_json(client, f"cluster:{cluster}:{kind}") or [] for kind in RESOURCE_LISTS}


def filtered_metrics(client: redis.Redis, cluster: str) -> dict[str, Any]:
    """The Python API's ``services/metrics.py`` with every resource visible (policy allow-all)."""
    stored = get_json(client, f"cluster:{cluster}:metrics")
    if stored is None:
        return {}
    if not client.exists(f"cluster:{cluster}:resource_metadata"):
        return {**stored, "filtered": False}
    nodes = cluster_nodes(client, cluster)
    lists = resource_lists(client, cluster)
    pods = Counter(str(p["status"]).lower() for p in lists["pods"])
    result = dict(stored)
    result.update({field: sum(node.get(field, 0) for node in nodes) for field in NODE_SUMS})
    result.update(
        nodes=len(nodes),
        nodes_ready=sum(1 for n in nodes if n["status"] == "Ready"),
        nodes_not_ready=sum(1 for n in nodes if n["status"] != "Ready"),
        namespaces=len(namespaces(client, cluster)),
        pods=len(lists["pods"]),
        pods_running=pods["running"],
        pods_pending=pods["pending"],
        pods_failed=pods["failed"],
        deployments=len(lists["deployments"]),
        services=len(lists["services"]),
        statefulsets=len(lists["statefulsets"]),
        daemonsets=len(lists["daemonsets"]),
        operators=len(get_json(client, f"cluster:{cluster}:operators") or []),
        filtered=True,
    )
    return result


def expected_metrics(cluster: str) -> dict[str, Any]:
    """The counts of ``cluster:<c>:metrics`` from the fleet's YAML (docs/compatibility.md#r1)."""
    nodes = fixture_objects(cluster, "Node")
    pods = phases(cluster)
    ready = sum(1 for n in nodes if node_ready(n))
    return {
        "nodes": len(nodes),
        "nodes_ready": ready,
        "nodes_not_ready": len(nodes) - ready,
        "namespaces": len(fixture_objects(cluster, "Namespace")),
        "pods": sum(pods.values()),
        "pods_running": pods["Running"],
        "pods_pending": pods["Pending"],
        "pods_failed": pods["Failed"],
        "deployments": len(fixture_objects(cluster, "Deployment")),
        "services": len(fixture_objects(cluster, "Service")),
        "statefulsets": len(fixture_objects(cluster, "StatefulSet")),
        "daemonsets": len(fixture_objects(cluster, "DaemonSet")),
        "pvcs": len(fixture_objects(cluster, "PersistentVolumeClaim")),
        "storage_used": 0,
    }


# ---------------------------------------------------------------------------- one test per row


def test_get_clusters(client: redis.Redis) -> None:
    """``GET /clusters``: the set, then spec, status, metrics and info per cluster, operators counted."""
    assert sorted(client.smembers("clusters:all")) == sorted(CLUSTERS)
    pipe = client.pipeline()
    for cluster in CLUSTERS:
        for suffix in ("spec", "status", "metrics", "info"):
            pipe.get(f"cluster:{cluster}:{suffix}")
    values = [msgspec.json.decode(v) if v else None for v in pipe.execute()]
    for index, cluster in enumerate(CLUSTERS):
        spec, status, metrics, info = values[4 * index : 4 * index + 4]
        assert isinstance(spec["displayName"], str) and spec["displayName"]
        assert isinstance(spec["endpoint"], str) and spec["endpoint"].startswith("http")
        assert spec["labels"] == connection_labels(cluster)
        assert spec["labels"]["environment"]  # the UI's "Environment" (R6)
        assert (status["health"], status["message"]) == expected_health(cluster), status
        assert_types(metrics, METRIC_TYPES, f"{cluster} metrics")
        assert {k: metrics[k] for k in expected_metrics(cluster)} == expected_metrics(cluster)
        parse_time(metrics["timestamp"])
        assert isinstance(info["api_url"], str) and info["api_url"]
        assert isinstance(info["version"], str) and info["version"]
        operators = get_json(client, f"cluster:{cluster}:operators") or []
        assert len(operators) == len(
            [s for s in fixture_objects(cluster, "Subscription") if s.get("status", {}).get("installedCSV")]
        )


def test_get_clusters_filtered_metrics_agree_with_stored_totals(client: redis.Redis) -> None:
    """The list/detail/metrics views' recomputation from nodes and lists equals the stored R1 totals."""
    for cluster in CLUSTERS:
        stored = get_json(client, f"cluster:{cluster}:metrics")
        filtered = filtered_metrics(client, cluster)
        assert filtered["filtered"] is True, cluster
        for field in METRIC_TYPES:
            if field == "timestamp":
                continue
            assert filtered[field] == pytest.approx(stored[field]), f"{cluster}.{field}"
        nodes = cluster_nodes(client, cluster)
        assert stored["cpu_usage_percent"] == pytest.approx(
            sum(n["cpu_requested"] for n in nodes) / sum(n["cpu_allocatable"] for n in nodes) * 100
        )
        assert stored["memory_usage_percent"] == pytest.approx(
            sum(n["memory_requested"] for n in nodes) / sum(n["memory_allocatable"] for n in nodes) * 100
        )
        assert stored["cpu_requested"] > 0 and stored["storage_capacity"] > 0


def test_get_cluster_detail(client: redis.Redis) -> None:
    """``GET /clusters/<c>``: the bundle plus ``resource_metadata`` (the resource_collection block)."""
    for cluster in CLUSTERS:
        meta = get_json(client, f"cluster:{cluster}:resource_metadata")
        assert_types(
            meta,
            {
                "timestamp": str,
                "collection_time_ms": int,
                "truncated": bool,
                "total_resources": int,
                "pods_count": int,
                "deployments_count": int,
                "services_count": int,
                "statefulsets_count": int,
                "daemonsets_count": int,
            },
            f"{cluster} resource_metadata",
        )
        block = {
            "enabled": True,
            "last_collection": meta["timestamp"],
            "collection_time_ms": meta["collection_time_ms"],
            "truncated": meta["truncated"],
        }
        parse_time(block["last_collection"])
        assert block["truncated"] is False  # the demo is below every cap
        lists = resource_lists(client, cluster)
        assert {f"{k}_count": len(v) for k, v in lists.items()} == {
            "pods_count": meta["pods_count"],
            "deployments_count": meta["deployments_count"],
            "services_count": meta["services_count"],
            "statefulsets_count": meta["statefulsets_count"],
            "daemonsets_count": meta["daemonsets_count"],
        }
        assert meta["total_resources"] == sum(len(v) for v in lists.values())
        assert client.ttl(f"cluster:{cluster}:resource_metadata") > 0


def test_get_cluster_nodes(client: redis.Redis) -> None:
    """``GET /clusters/<c>/nodes``: every member's ``current``, with age (R6) and filterable fields."""
    for cluster in CLUSTERS:
        nodes = cluster_nodes(client, cluster)
        fixtures = {n["metadata"]["name"]: n for n in fixture_objects(cluster, "Node")}
        assert sorted(n["name"] for n in nodes) == sorted(fixtures)
        for node in nodes:
            assert_types(
                node,
                {"name": str, "status": str, "roles": list, "labels": dict, "creation_timestamp": str},
                f"{cluster}/{node['name']}",
            )
            created = parse_time(node["creation_timestamp"])
            assert node["creation_timestamp"].endswith("Z") and created.year > 2000
            labels = fixtures[node["name"]]["metadata"].get("labels") or {}
            assert node["labels"] == labels
            prefix = "node-role.kubernetes.io/"
            assert node["roles"] == sorted(k[len(prefix) :] for k in labels if k.startswith(prefix))  # ?role=


def test_get_node_detail(client: redis.Redis) -> None:
    """``GET /clusters/<c>/nodes/<n>``: current, the last 100 samples, and ``current_conditions`` (R2)."""
    for cluster in CLUSTERS:
        for fixture in fixture_objects(cluster, "Node"):
            name = fixture["metadata"]["name"]
            assert client.hget(f"cluster:{cluster}:node:{name}", "current") is not None
            samples = [
                msgspec.json.decode(m) for m in client.zrevrange(f"cluster:{cluster}:node:{name}:metrics", 0, 99)
            ]
            assert samples, f"{cluster}/{name}: no metrics history"
            assert_types(
                samples[0],
                {"timestamp": str, "cpu_usage": float, "memory_usage": float, "pods_total": int},
                f"{cluster}/{name} sample",
            )
            raw = client.hgetall(f"cluster:{cluster}:node:{name}:conditions")
            conditions = {field: msgspec.json.decode(value) for field, value in raw.items()}
            want = {c["type"]: c for c in fixture.get("status", {}).get("conditions", [])}
            assert sorted(conditions) == sorted(want), f"{cluster}/{name}"
            for kind, condition in conditions.items():
                assert_types(
                    condition,
                    {"type": str, "status": str, "reason": str, "message": str, "last_transition_time": str},
                    f"{cluster}/{name} {kind}",
                )
                assert condition["type"] == kind
                assert condition["status"] == want[kind]["status"]
                assert condition["reason"] == want[kind].get("reason", "")
                assert condition["message"] == want[kind].get("message", "")
            ttl = client.ttl(f"cluster:{cluster}:node:{name}:conditions")
            assert 0 < ttl <= client.ttl(f"cluster:{cluster}:node:{name}") + 5


def test_get_cluster_operators(client: redis.Redis) -> None:
    """``GET /clusters/<c>/operators``: the list, each with the fields filters use (lists, never null)."""
    for cluster in CLUSTERS:
        for operator in get_json(client, f"cluster:{cluster}:operators") or []:
            assert_types(
                operator,
                {"name": str, "display_name": str, "status": str, "available_in_namespaces": list},
                f"{cluster} operator",
            )


def test_get_cluster_namespaces_with_counts(client: redis.Redis) -> None:
    """``GET /clusters/<c>/namespaces?with_operator_count&with_resource_counts``: per-namespace counts."""
    for cluster in CLUSTERS:
        names = namespaces(client, cluster)
        assert sorted(names) == sorted(n["metadata"]["name"] for n in fixture_objects(cluster, "Namespace"))
        assert sorted(client.smembers(f"cluster:{cluster}:namespaces:set")) == sorted(names)
        lists = resource_lists(client, cluster)
        operators = get_json(client, f"cluster:{cluster}:operators") or []
        for kind, fixture_kind in (
            ("pods", "Pod"),
            ("deployments", "Deployment"),
            ("services", "Service"),
            ("statefulsets", "StatefulSet"),
            ("daemonsets", "DaemonSet"),
        ):
            got = Counter(item["namespace"] for item in lists[kind])
            want = Counter(o["metadata"]["namespace"] for o in fixture_objects(cluster, fixture_kind))
            assert got == want, f"{cluster} {kind} per namespace"
        for op in operators:  # with_operator_count: "*" or membership per namespace
            assert all(isinstance(n, str) for n in op["available_in_namespaces"]) and op["available_in_namespaces"]
        shop = Counter(item["namespace"] for item in lists["pods"]).get("shop", 0)
        if cluster == "k8s-staging":
            assert shop == sum(1 for p in fixture_objects(cluster, "Pod") if p["metadata"]["namespace"] == "shop") > 0


def test_get_cluster_metrics(client: redis.Redis) -> None:
    """``GET /clusters/<c>/metrics`` (Python only): metrics present (else 404), resource-filtered."""
    for cluster in CLUSTERS:
        assert client.exists(f"cluster:{cluster}:metrics"), f"{cluster}: the endpoint would answer 404"
        assert client.exists(f"cluster:{cluster}:resource_metadata")
        metrics = filtered_metrics(client, cluster)
        assert metrics["filtered"] is True
        pods = phases(cluster)
        assert (metrics["pods"], metrics["pods_running"], metrics["pods_pending"], metrics["pods_failed"]) == (
            sum(pods.values()),
            pods["Running"],
            pods["Pending"],
            pods["Failed"],
        )
        lists = resource_lists(client, cluster)
        for pod in lists["pods"]:
            assert_types(pod, {"name": str, "namespace": str, "status": str}, f"{cluster} pod")
        for kind in ("deployments", "statefulsets"):
            for item in lists[kind]:
                assert_types(item, {"name": str, "namespace": str, "replicas": int, "ready": int}, kind)
        for item in lists["daemonsets"]:
            assert_types(
                item, {"name": str, "namespace": str, "desired": int, "current": int, "ready": int}, "daemonset"
            )
        for item in lists["services"]:
            assert_types(item, {"name": str, "namespace": str, "type": str}, "service")


def test_get_cluster_alerts(client: redis.Redis) -> None:
    """``GET /clusters/<c>/alerts``: ``SCAN alerts:<c>:*`` + ``HGETALL``; every alert a hash of strings."""
    for cluster in CLUSTERS:
        alerts = []
        for key in client.scan_iter(match=f"alerts:{cluster}:*", count=100):
            assert client.type(key) == "hash", key
            alerts.append(client.hgetall(key))
        for alert in alerts:
            assert alert["severity"] in ("critical", "warning", "info"), alert
            parse_time(alert["timestamp"])


def test_get_cluster_events(client: redis.Redis) -> None:
    """``GET /clusters/<c>/events``: ``LRANGE events:<c> 0 99``, newest first, one reconcile event per cycle."""
    for cluster in CLUSTERS:
        events = [msgspec.json.decode(item) for item in client.lrange(f"events:{cluster}", 0, 99)]
        reconciled = [e for e in events if e["type"] == "cluster.reconciled"]
        assert len(reconciled) == 2, f"{cluster}: two cycles"
        assert all(e["data"]["health"] == expected_health(cluster)[0] for e in reconciled)
        for event in events:  # alert events (R4) share the list
            assert isinstance(event["type"], str) and event["cluster"] == cluster
            assert event["data"] is None or isinstance(event["data"], dict)
        times = [parse_time(e["timestamp"]) for e in events]
        assert times == sorted(times, reverse=True)


def _definition(client: redis.Redis) -> dict[str, Any]:
    members = sorted(client.smembers(f"metricsources:by:resourcetype:{RESOURCE_TYPE}"))
    assert members == [SOURCE_ID]
    namespace, name = members[0].split("/", 1)
    definition: dict[str, Any] = get_json(client, f"metricsource:{namespace}:{name}")
    return definition


def test_get_custom_resources(client: redis.Redis) -> None:
    """``GET /clusters/<c>/custom/<T>``: by-type set, definition (CRD defaults applied, R5), data."""
    definition = _definition(client)
    assert definition["rbac"]["resourceTypeName"] == RESOURCE_TYPE
    assert definition["rbac"]["filterAggregations"] is True  # the CRD default reached the controller
    assert [f["name"] for f in definition["fields"]] == ["phase", "node", "cpu", "restarts"]
    assert [c["name"] for c in definition["computed"]] == ["millicores"]
    assert definition["source"]["kind"] == "Pod"
    excluded = ("kube-*", "openshift-*")
    for cluster in CLUSTERS:
        collection = get_json(client, f"cluster:{cluster}:custom:{SOURCE_ID}:resources")
        assert isinstance(collection["resources"], list)
        assert isinstance(collection["truncated"], bool)
        parse_time(collection["collectedAt"])
        pods = [
            p
            for p in fixture_objects(cluster, "Pod")
            if not any(fnmatch.fnmatch(p["metadata"]["namespace"], x) for x in excluded)
        ]
        assert sorted((r["_namespace"], r["_name"]) for r in collection["resources"]) == sorted(
            (p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods
        )
        for resource in collection["resources"]:
            assert isinstance(resource["values"], dict)
        # ?namespace=shop: items filtered, and (filterAggregations) aggregations recomputed over them.
        shop = [r for r in collection["resources"] if r["_namespace"] == "shop"]
        assert len(shop) == sum(1 for p in pods if p["metadata"]["namespace"] == "shop")
        aggregations = get_json(client, f"cluster:{cluster}:custom:{SOURCE_ID}:aggregations")
        assert aggregations["values"]["pods"] == len(pods)


def test_get_custom_types(client: redis.Redis) -> None:
    """``GET /custom-types?include_cluster_availability``: enabled sources and the clusters with data."""
    enabled = sorted(client.smembers("metricsources:enabled"))
    assert enabled == [SOURCE_ID]
    for source in enabled:
        namespace, name = source.split("/", 1)
        assert get_json(client, f"metricsource:{namespace}:{name}")["rbac"]["resourceTypeName"] == RESOURCE_TYPE
        with_data = sorted(
            key.split(":")[1] for key in client.scan_iter(match=f"cluster:*:custom:{source}:resources", count=1000)
        )
        assert with_data == sorted(CLUSTERS)


def test_get_custom_type_clusters(client: redis.Redis) -> None:
    """``GET /custom-types/clusters?type=<T>&include_aggregations``: one pipeline over the clusters."""
    _definition(client)
    pipe = client.pipeline()
    for cluster in sorted(client.smembers("clusters:all")):
        pipe.get(f"cluster:{cluster}:custom:{SOURCE_ID}:resources")
        pipe.get(f"cluster:{cluster}:custom:{SOURCE_ID}:aggregations")
    values = pipe.execute()
    assert len(values) == 2 * len(CLUSTERS) and all(values)
    for resources, aggregations in zip(values[::2], values[1::2], strict=True):
        assert isinstance(msgspec.json.decode(resources)["resources"], list)
        assert isinstance(msgspec.json.decode(aggregations)["values"], dict)


def test_get_registries_status(client: redis.Redis) -> None:
    """``GET /registries/status``: the demo's docker-registry, with what the endpoint passes on."""
    assert sorted(client.smembers("registries:all")) == ["demo-registry"]
    spec = get_json(client, "registry:demo-registry:spec")
    status = get_json(client, "registry:demo-registry:status")
    assert spec["display_name"] == "Demo Registry (docker-registry)"
    assert spec["endpoint"].startswith("http://127.0.0.1:")
    assert_types(status, {"available": bool, "response_time": int}, "registry status")
    assert status["available"] is True and "error" not in status


def test_get_public_cluster_health(client: redis.Redis) -> None:
    """``GET /public/clusters/health`` (Python, anonymous): spec and status of every cluster."""
    for cluster in sorted(client.smembers("clusters:all")):
        spec = get_json(client, f"cluster:{cluster}:spec") or {"displayName": cluster, "labels": {}}
        status = get_json(client, f"cluster:{cluster}:status") or {"health": "unknown"}
        assert spec["displayName"] and status["health"] == expected_health(cluster)[0]
        parse_time(status["last_check"])


def test_auth_endpoints(client: redis.Redis) -> None:
    """``/auth/*``: ``/logout`` and ``/cache/clear`` delete the API's own user and RBAC cache keys; the
    controller writes none of them, so clearing them loses none of our data."""
    before = set(client.scan_iter(count=1000))
    assert not [k for k in before if k.split(":", 1)[0] in ("user", "rbac")]
    client.set("user:groups:dev-user", '["developers"]')
    client.set("user:permissions:dev-user", "{}")
    client.delete(
        "user:groups:dev-user",
        "user:permissions:dev-user",
        *client.scan_iter(match="rbac:decision:*"),
        *client.scan_iter(match="rbac:custom:*"),
    )
    assert set(client.scan_iter(count=1000)) == before


def test_policy_lookups_of_every_authorized_request(client: redis.Redis) -> None:
    """Every authorized request: ``ZREVRANGE policy:<who>:sorted`` and ``HGET <policy> data``. The demo's
    two MonitorAccessPolicies are found that way (the policy plugin compiled them), and a policy seeded
    by hand beside them is found too: nothing else writes or prunes the readers' lookup keys."""
    for group, name in (("platform-admins", "platform-admins"), ("staging-team", "staging-team")):
        [(key, _score)] = client.zrevrange(f"policy:group:{group}:sorted", 0, -1, withscores=True)
        assert key == f"policy:clusterpulse:{name}"
        assert msgspec.json.decode(client.hget(key, "data"))["policy_name"] == name
    client.hset(
        "policy:clusterpulse:compat-allow-all",
        mapping={"data": '{"policy_name": "compat-allow-all"}', "priority": "1000"},
    )
    client.zadd("policy:group:developers:sorted", {"policy:clusterpulse:compat-allow-all": 1000})
    try:
        found = client.zrevrange("policy:group:developers:sorted", 0, -1, withscores=True)
        assert found == [("policy:clusterpulse:compat-allow-all", 1000.0)]
        assert msgspec.json.decode(client.hget(found[0][0], "data"))["policy_name"] == "compat-allow-all"
        assert client.zrevrange("policy:user:dev-user:sorted", 0, -1) == []
    finally:
        client.delete("policy:clusterpulse:compat-allow-all", "policy:group:developers:sorted")


def test_health_and_ready(client: redis.Redis) -> None:
    """``/readyz`` (Go) pings Redis; ``/health`` reads nothing."""
    assert client.ping() is True


def test_node_age_is_not_unknown(client: redis.Redis) -> None:
    """R6 end to end: every node's ``creation_timestamp`` is the emulator's creation time, not zero."""
    for cluster in CLUSTERS:
        for node in cluster_nodes(client, cluster):
            assert parse_time(node["creation_timestamp"]) > datetime.fromisoformat("2020-01-01T00:00:00+00:00")
