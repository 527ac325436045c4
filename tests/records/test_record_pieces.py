"""The generic record piece: validation, the Redis layout, deletion and the history gauges."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_redis.store import RedisStore
from clusterpulse_vmwriter.render import piece_lines

from clusterpulse_core.pieces import RecordDeletion, RecordPiece

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "Cluster"}, "kind: 'Cluster' is reserved by the upstream key layout; choose another kind name"),
        (
            {"kind": "Config:Audit"},
            "kind: 'Config:Audit' is not a valid kind (letters and digits, starting with a letter)",
        ),
        ({"name": "a:b"}, "name: 'a:b' is not a valid Kubernetes object name"),
        ({"name": "*"}, "name: '*' is not a valid Kubernetes object name"),
        ({"namespace": "x/y"}, "namespace: 'x/y' is not a valid Kubernetes namespace name"),
        (
            {"indexes": ("a:b",)},
            "indexes: 'a:b' is not a valid index name (letters, digits, '_', '.', '=', '-'; no ':' or '/')",
        ),
        (
            {"numbers": {"a-b": 1}},
            "numbers: 'a-b' is not a valid number name (a metric name part: letters, digits and '_')",
        ),
        ({"numbers": {"n": "3"}}, "numbers.n: expected a number, got '3'"),
        ({"ttl": 0}, "ttl: expected a whole number of seconds >= 1 or None, got 0"),
    ],
)
def test_every_name_is_validated(fields: dict[str, Any], message: str) -> None:
    values: dict[str, Any] = {"kind": "ConfigAudit", "namespace": "ns", "name": "a", **fields}
    with pytest.raises(ValueError) as caught:
        RecordPiece(**values)
    assert str(caught.value) == message


def test_redis_layout_index_changes_ttl_and_deletion(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = RedisStore(RedisSettings(), client=client)
    first = RecordPiece("ConfigAudit", "ns", "a", {"x": [1, 2]}, {"n": 2}, ("team=a", "env=prod"), 120, WHEN)
    other = RecordPiece("ConfigAudit", "ns", "b", {}, indexes=("team=a",))
    store.store([first, other])
    assert json.loads(client.get("configaudit:ns/a") or b"") == {
        "kind": "ConfigAudit",
        "namespace": "ns",
        "name": "a",
        "document": {"x": [1, 2]},
        "numbers": {"n": 2},
        "indexes": ["team=a", "env=prod"],
        "timestamp": "2026-01-02T03:04:05Z",
    }
    assert 0 < client.ttl("configaudit:ns/a") <= 120
    assert client.ttl("configaudit:ns/b") == -1
    assert client.smembers("configaudit:all") == {b"ns/a", b"ns/b"}
    assert client.smembers("configaudit:index:team=a") == {b"ns/a", b"ns/b"}

    # Stored again with other indexes: it leaves the ones it no longer names.
    store.store([RecordPiece("ConfigAudit", "ns", "a", {}, indexes=("team=b",))])
    assert client.smembers("configaudit:index:team=a") == {b"ns/b"}
    assert client.exists("configaudit:index:env=prod") == 0
    assert client.smembers("configaudit:index:team=b") == {b"ns/a"}

    store.store([RecordDeletion("ConfigAudit", "ns", "a")])
    assert client.exists("configaudit:ns/a", "configaudit:index:team=b") == 0
    assert client.smembers("configaudit:all") == {b"ns/b"}
    assert client.smembers("configaudit:index:team=a") == {b"ns/b"}


def test_history_has_one_gauge_per_number() -> None:
    piece = RecordPiece(
        "ConfigAudit", "ns", "a", {"ignored": 1}, {"configmaps": 3, "ratio": 0.5, "bad": float("nan")}, timestamp=WHEN
    )
    stream, lines = piece_lines([piece, RecordDeletion("ConfigAudit", "ns", "a")], 0, (("region", "eu"),))
    ts = int(WHEN.timestamp() * 1000)
    assert stream == ("record:configaudit:ns/a",)
    assert lines == [
        f'clusterpulse_configaudit_configmaps{{namespace="ns",name="a",region="eu"}} 3 {ts}',
        f'clusterpulse_configaudit_ratio{{namespace="ns",name="a",region="eu"}} 0.5 {ts}',
    ]
    assert piece_lines([RecordPiece("ConfigAudit", "ns", "a", {"x": 1})], 0) == ((), [])
