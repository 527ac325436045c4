"""End to end into a real redis-server: MetricSources reconciled over two managed clusters, read back from Redis.

The plugins are the installed ``metricsource`` and ``redis`` ones, loaded through their entry
points from a config file (``bootstrap.load`` with an empty environment, so the machine's
``REDIS_HOST``... cannot leak in); the hub and the managed clusters are the Kubernetes API
emulators of the ``fleet`` fixture. What is checked is what docs/compatibility.md#metricsource-wire
and docs/compatibility.md#deletion promise to readers, value by value.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_testing.vectors import same_value

from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import (
    Outcome,
    build_runtime,
    list_objects,
    load,
    reconcile_object,
    stop_plugins,
)

from .conftest import CUSTOM_API_VERSION, NAMESPACE, Fleet

CACHE_TTL = 600
EVENTS = "metricsource-events"
NANO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z")
SECONDS_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
MESSAGE_WAIT_SECONDS = 5.0

# Written in the canonical key order (docs/compatibility.md#metricsource-wire), so its compact JSON is what gets hashed.
CACTI: dict[str, Any] = {
    "source": {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus", "namespaces": {"exclude": ["kube-*"]}},
    "fields": [
        {"name": "size", "path": ".spec.size", "type": "quantity"},
        {"name": "arms", "path": ".spec.arms", "type": "integer"},
        {"name": "phase", "path": ".status.phase"},
        {"name": "tier", "path": ".metadata.labels.tier", "default": "short"},
    ],
    "computed": [
        {"name": "label", "expression": "concat(tier, '-', lower(phase))", "type": "string"},
        {"name": "armsPerSize", "expression": "round(arms / size, 1)"},
    ],
    "aggregations": [
        {"name": "total", "function": "count"},
        {
            "name": "bloomingArmsByTier",
            "field": "arms",
            "function": "sum",
            "filter": {"field": "phase", "operator": "equals", "value": "Blooming"},
            "groupBy": "tier",
        },
        {"name": "maxSize", "field": "size", "function": "max"},
    ],
    "collection": {"intervalSeconds": 120, "timeoutSeconds": 10, "batchSize": 2},
    "rbac": {"resourceTypeName": "cactus", "filterableFields": ["phase"]},
}
# CACTI as the hub's API server stores it: the CRD's schema defaults filled in (docs/compatibility.md#r5), keys in
# the canonical order (docs/compatibility.md#metricsource-wire). The hash is taken over this.
CACTI_SERVED: dict[str, Any] = {
    "source": {
        "apiVersion": CUSTOM_API_VERSION,
        "kind": "Cactus",
        "scope": "Namespaced",
        "namespaces": {"exclude": ["kube-*"]},
    },
    "fields": [
        {"name": "size", "path": ".spec.size", "type": "quantity"},
        {"name": "arms", "path": ".spec.arms", "type": "integer"},
        {"name": "phase", "path": ".status.phase", "type": "string"},
        {"name": "tier", "path": ".metadata.labels.tier", "type": "string", "default": "short"},
    ],
    "computed": [
        {"name": "label", "expression": "concat(tier, '-', lower(phase))", "type": "string"},
        {"name": "armsPerSize", "expression": "round(arms / size, 1)", "type": "float"},
    ],
    "aggregations": CACTI["aggregations"],
    "collection": {
        "intervalSeconds": 120,
        "timeoutSeconds": 10,
        "maxResources": 5000,
        "batchSize": 2,
        "retryAttempts": 3,
        "parallelism": 3,
    },
    "rbac": {"resourceTypeName": "cactus", "filterableFields": ["phase"], "filterAggregations": True},
}
# A second source, whose keys must survive the deletion of the first.
BLOOMS: dict[str, Any] = {
    "source": {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus", "namespaces": {"include": ["team-a"]}},
    "fields": [{"name": "phase", "path": ".status.phase"}],
    "aggregations": [{"name": "count", "function": "count"}],
    "rbac": {"resourceTypeName": "succulent"},
}
GI = 1024.0**3


def record(namespace: str, name: str, values: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    """One stored resource (``cluster:<c>:custom:<ns>/<name>:resources``): ``_labels`` is omitted when empty."""
    stored: dict[str, Any] = {"_id": f"{namespace}/{name}", "_namespace": namespace, "_name": name, "values": values}
    if labels:
        stored["_labels"] = labels
    return stored


# The fleet's cacti (conftest.py), through CACTI; kube-system/agave is excluded by the source.
EXPECTED_RESOURCES = {
    "east": [
        record(
            "team-a",
            "saguaro",
            {"size": 0.5, "arms": 3, "phase": "Blooming", "tier": "tall", "label": "tall-blooming", "armsPerSize": 6.0},
            {"tier": "tall"},
        ),
        record(
            "team-a",
            "barrel",
            {
                "size": 2 * GI,
                "arms": 0,
                "phase": "Dormant",
                "tier": "short",
                "label": "short-dormant",
                "armsPerSize": 0.0,
            },
        ),
        record(
            "team-b",
            "cholla",
            {
                "size": 1.5,
                "arms": 5,
                "phase": "Blooming",
                "tier": "short",
                "label": "short-blooming",
                "armsPerSize": 3.3,
            },
        ),
    ],
    "west": [
        record(
            "team-a",
            "prickly",
            {
                "size": 0.25,
                "arms": 2,
                "phase": "Blooming",
                "tier": "short",
                "label": "short-blooming",
                "armsPerSize": 8.0,
            },
        ),
        record(
            "team-c",
            "opuntia",
            {
                "size": 1000.0,
                "arms": 7,
                "phase": "Blooming",
                "tier": "short",
                "label": "short-blooming",
                "armsPerSize": 0.0,
            },
        ),
    ],
}
EXPECTED_AGGREGATIONS = {
    "east": {"total": 3.0, "bloomingArmsByTier": {"tall": 3.0, "short": 5.0}, "maxSize": 2 * GI},
    "west": {"total": 2.0, "bloomingArmsByTier": {"short": 9.0}, "maxSize": 1000.0},
}


def spec_hash(spec: dict[str, Any]) -> str:
    """docs/compatibility.md#metricsource-wire: the first 8 bytes of SHA-256 of the compact canonical JSON, in hex."""
    canonical = json.dumps(spec, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def reconcile_sources(runtime: Runtime) -> list[Outcome]:
    """Every MetricSource reconciled once (``run --once`` for that kind only: the cluster plugin, loaded for
    its fleet view, would also reconcile the ClusterConnections)."""
    objects = list_objects(runtime, METRIC_SOURCE)
    return [reconcile_object(runtime, "metricsource", METRIC_SOURCE, obj) for obj in objects]


@pytest.fixture
def runtime(fleet: Fleet, redis_url: str, tmp_path: Path) -> Iterator[Runtime]:
    """The runtime of a config enabling ``cluster`` (whose fleet view the sources collect from),
    ``metricsource`` and ``redis`` (entry points), on the fleet's hub."""
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        "[clusterpulse]\n"
        'plugins = ["cluster", "metricsource", "redis"]\n'
        f'namespace = "{NAMESPACE}"\n'
        "request_timeout = 10.0\n"
        "\n[plugins.redis]\n"
        f'url = "{redis_url}"\n'
    )
    config, host = load(str(config_file), env={})
    built = build_runtime(config, host, hub=KubeClient(fleet.hub.api_client()))
    yield built
    stop_plugins(built)
    built.hub.close()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    """A reader of the test's Redis, decoding to text."""
    reader = redis.Redis.from_url(redis_url, decode_responses=True)
    yield reader
    reader.close()


def read_json(client: redis.Redis, key: str) -> Any:
    """The JSON value of string key ``key`` (fails when the key is missing)."""
    text = client.get(key)
    assert isinstance(text, str), f"{key} is missing"
    return json.loads(text)


def subscribe(client: redis.Redis, channel: str) -> Any:
    """A subscription to ``channel``, once the server confirmed it (so no later publication is missed)."""
    subscription = client.pubsub()
    subscription.subscribe(channel)
    deadline = time.monotonic() + MESSAGE_WAIT_SECONDS
    confirmation = None
    while confirmation is None and time.monotonic() < deadline:
        confirmation = subscription.get_message(timeout=0.5)
    assert confirmation is not None and confirmation["type"] == "subscribe", confirmation
    return subscription


def messages(subscription: Any, count: int) -> list[dict[str, Any]]:
    """The next ``count`` published messages, decoded (bounded wait)."""
    received: list[dict[str, Any]] = []
    deadline = time.monotonic() + MESSAGE_WAIT_SECONDS
    while len(received) < count and time.monotonic() < deadline:
        message = subscription.get_message(ignore_subscribe_messages=True, timeout=0.5)
        if message is not None:
            received.append(json.loads(message["data"]))
    return received


def custom_key(cluster: str, name: str, suffix: str) -> str:
    """``cluster:<c>:custom:<ns>/<name>:<suffix>``."""
    return f"cluster:{cluster}:custom:{NAMESPACE}/{name}:{suffix}"


def snapshot(client: redis.Redis) -> dict[str, Any]:
    """Every key with its type and value, to compare the keyspace before and after."""
    state: dict[str, Any] = {}
    for key in client.scan_iter("*"):
        kind = client.type(key)
        if kind == "string":
            state[key] = client.get(key)
        elif kind == "hash":
            state[key] = client.hgetall(key)
        elif kind == "set":
            state[key] = client.smembers(key)
        else:
            state[key] = kind
    return state


def delete(fleet: Fleet, runtime: Runtime, name: str) -> None:
    """Delete MetricSource ``name`` from the hub and reconcile the deletion as the runtime does."""
    obj = fleet.metric_source(name)
    fleet.hub.delete("clusterpulse.io/v1alpha1", "MetricSource", name, NAMESPACE)
    obj["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    outcome = reconcile_object(runtime, "metricsource", METRIC_SOURCE, obj)
    assert (outcome.ok, outcome.detail) == (True, "deleted")


def check_definition(client: redis.Redis) -> None:
    definition = read_json(client, f"metricsource:{NAMESPACE}:cacti")
    assert client.ttl(f"metricsource:{NAMESPACE}:cacti") == -1
    compiled_at = definition.pop("compiledAt")
    assert SECONDS_TIME.fullmatch(compiled_at), compiled_at
    assert same_value(
        definition,
        {
            "name": "cacti",
            "namespace": NAMESPACE,
            # The hub does not serve Cactus: the stored resource is the pluraliser's (M7).
            "source": {
                "apiVersion": CUSTOM_API_VERSION,
                "kind": "Cactus",
                "scope": "Namespaced",
                "group": "botany.example.io",
                "version": "v1",
                "resource": "cactuses",
                "namespaces": {"exclude": ["kube-*"]},
            },
            "fields": [
                {
                    "name": "size",
                    "path": ".spec.size",
                    "pathSegments": ["spec", "size"],
                    "type": "quantity",
                    "index": 0,
                },
                {"name": "arms", "path": ".spec.arms", "pathSegments": ["spec", "arms"], "type": "integer", "index": 1},
                {
                    "name": "phase",
                    "path": ".status.phase",
                    "pathSegments": ["status", "phase"],
                    "type": "string",
                    "index": 2,
                },
                {
                    "name": "tier",
                    "path": ".metadata.labels.tier",
                    "pathSegments": ["metadata", "labels", "tier"],
                    "type": "string",
                    "default": "short",
                    "index": 3,
                },
            ],
            "computed": [
                {"name": "label", "expression": "concat(tier, '-', lower(phase))", "type": "string"},
                {"name": "armsPerSize", "expression": "round(arms / size, 1)", "type": "float"},
            ],
            "aggregations": CACTI["aggregations"],
            "collection": {
                "intervalSeconds": 120,
                "timeoutSeconds": 10,
                "maxResources": 5000,
                "batchSize": 2,
                "retryAttempts": 3,
                "parallelism": 3,
            },
            "rbac": {"resourceTypeName": "cactus", "filterableFields": ["phase"], "filterAggregations": True},
            "hash": spec_hash(CACTI_SERVED),
        },
    ), definition
    meta_key = f"metricsource:{NAMESPACE}:cacti:meta"
    assert client.ttl(meta_key) == -1
    assert client.hgetall(meta_key) == {
        "compiledAt": compiled_at,
        "hash": spec_hash(CACTI_SERVED),
        "kind": "Cactus",
        "apiVersion": CUSTOM_API_VERSION,
        "resourceTypeName": "cactus",
    }


def check_collection(client: redis.Redis, cluster: str) -> None:
    collection = read_json(client, custom_key(cluster, "cacti", "resources"))
    expected = EXPECTED_RESOURCES[cluster]
    assert NANO_TIME.fullmatch(collection["collectedAt"]), collection["collectedAt"]
    assert type(collection["durationMs"]) is int and collection["durationMs"] >= 0
    assert {k: collection[k] for k in ("sourceId", "clusterName", "resourceCount", "truncated")} == {
        "sourceId": f"{NAMESPACE}/cacti",
        "clusterName": cluster,
        "resourceCount": len(expected),
        "truncated": False,
    }
    assert set(collection) == {
        "collectedAt",
        "sourceId",
        "clusterName",
        "resourceCount",
        "truncated",
        "durationMs",
        "resources",
    }
    stored = {r["_id"]: r for r in collection["resources"]}
    assert len(stored) == len(collection["resources"]) == len(expected)
    for want in expected:
        assert same_value(stored[want["_id"]], want), (stored[want["_id"]], want)

    meta = read_json(client, custom_key(cluster, "cacti", "meta"))
    assert meta == {
        "sourceId": f"{NAMESPACE}/cacti",
        "clusterName": cluster,
        "lastCollectionTime": collection["collectedAt"],
        "durationMs": collection["durationMs"],
        "resourceCount": len(expected),
        "truncated": False,
        "errorCount": 0,
    }

    aggregations = read_json(client, custom_key(cluster, "cacti", "aggregations"))
    assert NANO_TIME.fullmatch(aggregations.pop("computedAt"))
    assert type(aggregations.pop("durationMs")) is int
    assert same_value(aggregations, {"sourceId": f"{NAMESPACE}/cacti", "values": EXPECTED_AGGREGATIONS[cluster]}), (
        aggregations
    )
    for suffix in ("resources", "meta", "aggregations"):
        assert 0 < client.ttl(custom_key(cluster, "cacti", suffix)) <= CACHE_TTL


def test_metricsources_reconciled_into_redis_then_deleted(fleet: Fleet, runtime: Runtime, client: redis.Redis) -> None:
    subscription = subscribe(client, EVENTS)
    fleet.apply("cacti", CACTI)
    fleet.apply("blooms", BLOOMS)

    outcomes = reconcile_sources(runtime)
    assert sorted((o.ref.name, o.ok, o.requeue_after) for o in outcomes) == [("blooms", True, 60), ("cacti", True, 120)]

    check_definition(client)
    assert client.smembers("metricsources:all") == {f"{NAMESPACE}/cacti", f"{NAMESPACE}/blooms"}
    assert client.smembers("metricsources:enabled") == {f"{NAMESPACE}/cacti", f"{NAMESPACE}/blooms"}
    assert client.smembers("metricsources:by:resourcetype:cactus") == {f"{NAMESPACE}/cacti"}
    assert client.smembers("metricsources:by:resourcetype:succulent") == {f"{NAMESPACE}/blooms"}
    for cluster in ("east", "west"):
        check_collection(client, cluster)
    assert not list(client.scan_iter("cluster:north:*"))  # not Connected: never collected
    assert read_json(client, custom_key("east", "blooms", "aggregations"))["values"] == {"count": 2.0}
    assert read_json(client, custom_key("west", "blooms", "aggregations"))["values"] == {"count": 1.0}

    events = {event["sourceId"]: event for event in messages(subscription, 2)}
    assert set(events) == {f"{NAMESPACE}/cacti", f"{NAMESPACE}/blooms"}
    reconciled = events[f"{NAMESPACE}/cacti"]
    assert NANO_TIME.fullmatch(reconciled.pop("timestamp"))
    assert reconciled == {
        "type": "reconciled",
        "sourceId": f"{NAMESPACE}/cacti",
        "data": {"resources": 5, "clusters": 2, "errors": 0},
    }
    assert events[f"{NAMESPACE}/blooms"]["data"] == {"resources": 3, "clusters": 2, "errors": 0}

    status = fleet.metric_source("cacti")["status"]
    assert (status["phase"], status["resourcesCollected"], status["clustersCollected"], status["errorsLastRun"]) == (
        "Active",
        5,
        2,
        0,
    )
    assert status["message"] == "Collection successful"

    kept = {
        key: value
        for key, value in snapshot(client).items()
        if "blooms" in key or key == "metricsources:by:resourcetype:succulent"
    }
    delete(fleet, runtime, "cacti")

    after = snapshot(client)
    assert set(after) == set(kept) | {"metricsources:all", "metricsources:enabled"}
    assert {key: after[key] for key in kept} == kept  # the other source's keys, untouched
    assert after["metricsources:all"] == after["metricsources:enabled"] == {f"{NAMESPACE}/blooms"}
    assert "metricsources:by:resourcetype:cactus" not in after  # its last member went
    [deleted] = messages(subscription, 1)
    assert NANO_TIME.fullmatch(deleted.pop("timestamp"))
    assert deleted == {"type": "deleted", "sourceId": f"{NAMESPACE}/cacti", "data": None}
    subscription.close()


def test_truncation_at_max_resources_is_visible_in_redis(fleet: Fleet, runtime: Runtime, client: redis.Redis) -> None:
    fleet.apply(
        "few",
        {
            "source": {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus"},  # every namespace
            "fields": [{"name": "phase", "path": ".status.phase"}],
            "collection": {"maxResources": 2, "batchSize": 10},
        },
    )
    [outcome] = reconcile_sources(runtime)
    assert outcome.ok, outcome.detail
    # east holds 4 cacti; west exactly 2, which counts as truncated for a cluster-wide list (upstream rule).
    for cluster in ("east", "west"):
        collection = read_json(client, custom_key(cluster, "few", "resources"))
        assert (collection["resourceCount"], collection["truncated"], len(collection["resources"])) == (2, True, 2)
        meta = read_json(client, custom_key(cluster, "few", "meta"))
        assert (meta["resourceCount"], meta["truncated"]) == (2, True)
        assert client.exists(custom_key(cluster, "few", "aggregations")) == 0  # no aggregations defined
    assert client.smembers("metricsources:all") == {f"{NAMESPACE}/few"}
    assert not list(client.scan_iter("metricsources:by:resourcetype:*"))  # no resourceTypeName
    status = fleet.metric_source("few")["status"]
    assert (status["phase"], status["resourcesCollected"], status["clustersCollected"]) == ("Active", 4, 2)
