"""Alert pieces in the real Redis backend: the ``alerts:<c>:<id>`` hash (docs/compatibility.md#r4)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from clusterpulse_model import Alert
from clusterpulse_model.pieces import AlertPiece, AlertResolution, ClusterDeletion, RegistryDeletion
from clusterpulse_redis import RedisSettings, RedisStore
from clusterpulse_redis.alerts import read_alerts

STARTED = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
R4_FIELDS = {"id", "name", "severity", "message", "timestamp", "source", "resource_type", "resource_name", "namespace"}


def _alert(**changes: Any) -> Alert:
    values: dict[str, Any] = {
        "id": "OperatorFailed-0123456789abcdef",
        "name": "OperatorFailed",
        "severity": "warning",
        "message": "operator bad is in phase Failed",
        "timestamp": STARTED,
        "source": "builtin",
        "resource_type": "operator",
        "resource_name": "bad",
        "namespace": "ops",
        "cluster": "prod",
        "rule": "OperatorFailed",
    }
    values.update(changes)
    return Alert(**values)


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:
    backend = RedisStore(RedisSettings(url=redis_url, cache_ttl=120))
    yield backend
    backend.close()


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def test_alert_hash_has_the_r4_fields_as_strings_with_cache_ttl(store: RedisStore, raw: redis.Redis) -> None:
    alert = _alert()
    store.store([AlertPiece("prod", alert)])
    key = f"alerts:prod:{alert.id}"
    assert raw.type(key) == "hash"
    fields = raw.hgetall(key)
    assert set(fields) >= R4_FIELDS
    assert fields == {
        "id": alert.id,
        "name": "OperatorFailed",
        "severity": "warning",
        "message": "operator bad is in phase Failed",
        "timestamp": "2025-03-04T05:06:07Z",
        "source": "builtin",
        "resource_type": "operator",
        "resource_name": "bad",
        "namespace": "ops",
        "cluster": "prod",
        "rule": "OperatorFailed",
    }
    assert 110 < raw.ttl(key) <= 120
    assert read_alerts(store.client) == [alert]

    store.store([AlertResolution("prod", alert)])
    assert not raw.exists(key)
    assert read_alerts(store.client) == []


def test_names_are_validated_before_they_reach_a_key(store: RedisStore, raw: redis.Redis) -> None:
    for cluster, alert_id, what in (
        ("prod:x", "A-1", "alert cluster 'prod:x'"),
        ("prod", "A*", "alert id 'A\\*'"),
        ("", "A-1", "alert cluster ''"),
        ("prod", "a b", "alert id 'a b'"),
    ):
        with pytest.raises(ValueError, match=what):
            store.store([AlertPiece(cluster, _alert(id=alert_id))])
    assert raw.keys("alerts:*") == []


def test_deleting_a_cluster_or_registry_deletes_its_alerts(store: RedisStore, raw: redis.Redis) -> None:
    store.store(
        [
            AlertPiece("prod", _alert()),
            AlertPiece("prod", _alert(id="NodeNotReady-1")),
            AlertPiece("prod-2", _alert(id="NodeNotReady-1", cluster="prod-2")),
            AlertPiece("hub", _alert(id="RegistryUnavailable-1", cluster="hub")),
        ]
    )
    store.store([ClusterDeletion("prod")])
    assert sorted(raw.keys("alerts:*")) == ["alerts:hub:RegistryUnavailable-1", "alerts:prod-2:NodeNotReady-1"]
    store.store([RegistryDeletion("hub")])
    assert raw.keys("alerts:*") == ["alerts:prod-2:NodeNotReady-1"]
