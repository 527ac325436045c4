"""Rules on the stored values: never null for lists and maps, sorted roles, UTC times, trimming."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import attrs
import pytest
import redis
from clusterpulse_model import (
    ClusterOperatorInfo,
    CustomResourceCollection,
    NodeCondition,
    NodeMetrics,
    OperatorInfo,
    RegistryMetricsRecord,
    RegistryStatusRecord,
)
from clusterpulse_model.pieces import (
    ClusterOperatorsPiece,
    CustomResourcesPiece,
    EventPiece,
    NodesPiece,
    OperatorsPiece,
    RegistryMetricsPiece,
    RegistryStatusPiece,
)
from clusterpulse_redis import RedisStore, RedisStoreError
from redis_seed import T0, cluster_reconcile, node, registry_reconcile

from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import loads, structure


def stored_json(client: redis.Redis) -> Iterator[tuple[str, Any]]:
    """(where, parsed value) of every JSON document in Redis: strings, hash fields, members, items."""
    for raw_key in client.scan_iter(count=1000):
        key = raw_key.decode()
        kind = client.type(key).decode()
        if kind == "string":
            yield key, loads(client.get(key))  # type: ignore[arg-type]
        elif kind == "hash":
            for field, value in client.hgetall(key).items():  # type: ignore[union-attr]
                if value[:1] in (b"{", b"["):
                    yield f"{key}.{field.decode()}", loads(value)
        elif kind == "zset":
            for member in client.zrange(key, 0, -1):  # type: ignore[union-attr]
                yield f"{key}[]", loads(member)
        elif kind == "list":
            for item in client.lrange(key, 0, -1):  # type: ignore[union-attr]
                yield f"{key}[]", loads(item)


def nulls(value: Any, where: str) -> Iterator[str]:
    """Paths holding JSON null."""
    if value is None:
        yield where
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from nulls(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nulls(v, f"{where}[{i}]")


def test_no_null_where_the_contract_says_list_or_map(store: RedisStore, raw: redis.Redis) -> None:
    # Inputs as a collector would decode them from JSON with nulls for every absent list/map.
    empty_node = structure(
        {"name": "bare", "roles": None, "conditions": None, "labels": None, "annotations": None, "taints": None},
        NodeMetrics,
    )
    empty_op = structure(
        {"name": "op", "install_modes": None, "available_in_namespaces": None, "subscription": None}, OperatorInfo
    )
    empty_co = structure(
        {"name": "co", "conditions": None, "versions": None, "related_objects": None}, ClusterOperatorInfo
    )
    empty_status = structure({"available": False, "features": None, "repositories": None}, RegistryStatusRecord)
    store.store(
        [
            *cluster_reconcile("c1"),
            NodesPiece("c1", (empty_node,)),
            OperatorsPiece("c1", (empty_op,)),
            ClusterOperatorsPiece("c1", (empty_co,)),
            *registry_reconcile("r1"),
            RegistryStatusPiece("r1", empty_status),
        ]
    )
    found = [path for where, value in stored_json(raw) for path in nulls(value, where)]
    assert found == []
    current = loads(raw.hget("cluster:c1:node:bare", "current"))  # type: ignore[arg-type]
    assert (current["roles"], current["conditions"], current["labels"], current["taints"]) == ([], [], {}, [])
    assert loads(raw.get("registry:r1:status"))["repositories"] == []  # type: ignore[arg-type]


def test_node_roles_are_sorted_everywhere(store: RedisStore, raw: redis.Redis) -> None:
    store.store([NodesPiece("c1", (node("n1", roles=("worker", "infra", "control-plane")),))])
    current = loads(raw.hget("cluster:c1:node:n1", "current"))  # type: ignore[arg-type]
    assert current["roles"] == ["control-plane", "infra", "worker"]
    summary = loads(raw.hget("cluster:c1:nodes:summary", "data"))  # type: ignore[arg-type]
    assert summary["by_role"] == {"control-plane": 1, "infra": 1, "worker": 1}


def test_missing_kubernetes_time_is_written_as_the_zero_time(store: RedisStore, raw: redis.Redis) -> None:
    bare_condition = NodeCondition("Ready", "True")  # no lastTransitionTime
    store.store([NodesPiece("c1", (node("n1", conditions=(bare_condition,)),))])
    current = loads(raw.hget("cluster:c1:node:n1", "current"))  # type: ignore[arg-type]
    assert current["conditions"][0]["last_transition_time"] == "0001-01-01T00:00:00Z"


def test_times_are_utc_seconds_form_for_clusters_and_nano_for_metricsource(
    make_store: Callable[..., RedisStore], raw: redis.Redis
) -> None:
    fractional = T0 + timedelta(microseconds=123450)
    store = make_store(clock=lambda: fractional)
    store.store([*cluster_reconcile("c1")])
    assert raw.hget("cluster:c1:meta", "last_update") == b"2025-01-01T00:00:00Z"
    summary = loads(raw.hget("cluster:c1:nodes:summary", "data"))  # type: ignore[arg-type]
    assert summary["timestamp"] == "2025-01-01T00:00:00Z"
    store.store([CustomResourcesPiece("c1", CustomResourceCollection("a/b", "c1", fractional))])
    meta = loads(raw.get("cluster:c1:custom:a/b:meta"))  # type: ignore[arg-type]
    assert meta["lastCollectionTime"] == "2025-01-01T00:00:00.12345Z"


def test_node_and_registry_series_are_trimmed_to_the_retention(
    make_store: Callable[..., RedisStore], raw: redis.Redis
) -> None:
    now = [T0]
    store = make_store(clock=lambda: now[0], metrics_retention=300)
    samples = [T0, T0 + timedelta(seconds=200), T0 + timedelta(seconds=301)]
    for when in samples:
        now[0] = when
        store.store(
            [
                NodesPiece("c1", (node("n1", timestamp=when),)),
                RegistryMetricsPiece("r1", RegistryMetricsRecord(int(when.timestamp()), 5, True)),
            ]
        )
    unix = [int(t.timestamp()) for t in samples]
    kept = [int(score) for _, score in raw.zrange("cluster:c1:node:n1:metrics", 0, -1, withscores=True)]
    assert kept == unix[1:]  # score <= now - retention is removed
    kept = [int(score) for _, score in raw.zrange("registry:r1:metrics", 0, -1, withscores=True)]
    assert kept == unix[1:]
    assert 295 <= raw.ttl("cluster:c1:node:n1:metrics") <= 300


def test_event_list_keeps_the_newest_hundred(store: RedisStore, raw: redis.Redis) -> None:
    store.store([EventPiece("cluster.reconciled", "c1", {"n": i}, timestamp=T0) for i in range(105)])
    items = [loads(item) for item in raw.lrange("events:c1", 0, -1)]
    assert [item["data"]["n"] for item in items] == list(range(104, 4, -1))
    assert 86395 <= raw.ttl("events:c1") <= 86400


def test_metricsource_events_are_published_only(store: RedisStore, raw: redis.Redis) -> None:
    pubsub = raw.pubsub()
    pubsub.subscribe("metricsource-events")
    assert pubsub.get_message(timeout=5) is not None
    store.store(
        [
            EventPiece(
                "reconciled",
                "default/vms",
                {"resources": 3, "clusters": 1, "errors": 0},
                channel="metricsource-events",
                timestamp=T0,
            )
        ]
    )
    message = pubsub.get_message(ignore_subscribe_messages=True, timeout=5)
    pubsub.close()
    assert message is not None
    assert loads(message["data"]) == {
        "type": "reconciled",
        "sourceId": "default/vms",
        "timestamp": "2025-01-01T00:00:00Z",
        "data": {"resources": 3, "clusters": 1, "errors": 0},
    }
    assert list(raw.scan_iter()) == []


def test_unknown_pieces_are_ignored(store: RedisStore, raw: redis.Redis) -> None:
    @attrs.frozen
    class SomethingElse(Piece):
        cluster: str

    store.store([SomethingElse("c1")])
    assert list(raw.scan_iter()) == []


def test_a_failing_write_raises_with_the_cause(store: RedisStore, raw: redis.Redis) -> None:
    raw.set("clusters:all", "not a set")
    with pytest.raises(RedisStoreError, match="WRONGTYPE"):
        store.store(cluster_reconcile("c1"))


def test_empty_operator_lists_write_nothing(store: RedisStore, raw: redis.Redis) -> None:
    store.store([OperatorsPiece("c1", ()), ClusterOperatorsPiece("c1", ())])
    assert list(raw.scan_iter()) == []
