"""Storing policies through the redis backend, against a real redis-server: the exact key set after
each step (no stale member anywhere), events, cache invalidation, the validator and the clean-up."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import redis
from clusterpulse_model.pieces import (
    PolicyDeletion,
    PolicyErrorPiece,
    PolicyEvalCacheReset,
    PolicyEventPiece,
    PolicyValidation,
)
from clusterpulse_model.policy import PolicyErrorRecord
from clusterpulse_redis import RedisStore
from clusterpulse_redis.policies import group_cache_hit, parse_policy_key
from clusterpulse_vmwriter.render import render_batch
from policy_support import NAMESPACE, messages, piece, snapshot, spec

from clusterpulse_core.serde import loads

T0 = datetime(2025, 1, 1, tzinfo=UTC)
KEY = f"policy:{NAMESPACE}:p1"
SA = "system:serviceaccount:default:bot"
HASH_FIELDS = {"data", "priority", "effect", "enabled", "hash", "compiled_at", "status"}


def _indexes(kind: str, subject: str, priority: float = 100.0) -> dict[str, object]:
    return {f"policy:{kind}:{subject}": {KEY}, f"policy:{kind}:{subject}:sorted": {KEY: priority}}


def _globals(effect: str = "allow", enabled: bool = True, priority: float = 100.0) -> dict[str, object]:
    found: dict[str, object] = {
        KEY: HASH_FIELDS,
        "policies:all": {KEY},
        "policies:by:priority": {KEY: priority},
        f"policies:effect:{effect}": {KEY},
    }
    if enabled:
        found["policies:enabled"] = {KEY}
    return found


def test_store_update_disable_effect_change_and_delete_leave_exactly_the_expected_keys(
    store: RedisStore, raw: redis.Redis
) -> None:
    store.store([piece("p1", spec(users=("alice", "bob"), groups=("dev",), accounts=("bot",), types=("certs",)), T0)])
    assert snapshot(raw) == {
        **_globals(),
        **_indexes("user", "alice"),
        **_indexes("user", "bob"),
        **_indexes("group", "dev"),
        **_indexes("sa", SA),
        **_indexes("customtype", "certs"),
    }
    fields = raw.hgetall(KEY)
    data = loads(fields["data"])
    assert (fields["priority"], fields["effect"], fields["enabled"]) == ("100", "Allow", "true")
    assert (fields["hash"], fields["compiled_at"]) == (data["hash"], "2025-01-01T00:00:00Z")
    assert data["users"] == ["alice", "bob"] and data["service_accounts"] == [SA]
    assert loads(fields["status"]) == {
        "state": "Active",
        "message": "Policy is active",
        "compiledAt": "2025-01-01T00:00:00Z",
        "hash": data["hash"],
        "affectedUsers": 2,
        "affectedGroups": 1,
        "affectedServiceAccounts": 1,
        "customResourceTypes": 1,
    }
    assert all(raw.ttl(key) == -1 for key in snapshot(raw))

    # bob, the service account and the custom type removed; a new group; priority and effect change
    store.store([piece("p1", spec(users=("alice",), groups=("dev", "ops"), effect="Deny", priority=700), T0)])
    assert snapshot(raw) == {
        **_globals("deny", priority=700),
        **_indexes("user", "alice", 700),
        **_indexes("group", "dev", 700),
        **_indexes("group", "ops", 700),
    }

    # disabled: no subject index at all, out of policies:enabled, still in policies:all
    store.store(
        [piece("p1", spec(users=("alice",), groups=("dev", "ops"), effect="Deny", priority=700, enabled=False), T0)]
    )
    assert snapshot(raw) == _globals("deny", enabled=False, priority=700)
    assert raw.hget(KEY, "enabled") == "false"

    store.store([piece("p1", spec(users=("carol",), effect="Allow"), T0)])
    assert snapshot(raw) == {**_globals(), **_indexes("user", "carol")}

    store.store([PolicyDeletion(NAMESPACE, "p1", T0)])
    assert snapshot(raw) == {}


def test_two_policies_share_an_index_and_deleting_one_keeps_the_other(store: RedisStore, raw: redis.Redis) -> None:
    store.store(
        [
            piece("p1", spec(groups=("dev",), priority=10), T0),
            piece("p2", spec(groups=("dev",), priority=20, effect="Deny"), T0),
        ]
    )
    other = f"policy:{NAMESPACE}:p2"
    assert raw.zrevrange("policy:group:dev:sorted", 0, -1, withscores=True) == [(other, 20.0), (KEY, 10.0)]
    store.store([PolicyDeletion(NAMESPACE, "p1", T0)])
    assert snapshot(raw) == {
        other: HASH_FIELDS,
        "policies:all": {other},
        "policies:by:priority": {other: 20.0},
        "policies:enabled": {other},
        "policies:effect:deny": {other},
        "policy:group:dev": {other},
        "policy:group:dev:sorted": {other: 20.0},
    }


def test_deleting_a_policy_never_compiled_keeps_its_status_only_hash(store: RedisStore, raw: redis.Redis) -> None:
    pubsub = raw.pubsub()
    pubsub.subscribe("policy-changes")
    store.store([PolicyErrorPiece(NAMESPACE, "p1", PolicyErrorRecord("Compilation failed: x", T0))])
    assert snapshot(raw) == {KEY: {"status"}}
    assert loads(raw.hget(KEY, "status")) == {
        "message": "Compilation failed: x",
        "error_at": "2025-01-01T00:00:00Z",
        "state": "Error",
    }
    store.store([PolicyDeletion(NAMESPACE, "p1", T0)])
    assert snapshot(raw) == {KEY: {"status"}}
    assert messages(pubsub, 1, timeout=1.0) == []
    pubsub.close()


def test_an_error_keeps_the_last_good_data_and_indexes(store: RedisStore, raw: redis.Redis) -> None:
    store.store([piece("p1", spec(users=("alice",)), T0)])
    before = raw.hget(KEY, "data")
    store.store([PolicyErrorPiece(NAMESPACE, "p1", PolicyErrorRecord("Compilation failed: y", T0))])
    assert raw.hget(KEY, "data") == before
    assert snapshot(raw) == {**_globals(), **_indexes("user", "alice")}
    assert loads(raw.hget(KEY, "status"))["state"] == "Error"


def test_events_on_both_channels_and_deleted_published_by_the_deletion(store: RedisStore, raw: redis.Redis) -> None:
    pubsub = raw.pubsub()
    pubsub.subscribe("policy-changes", "policy-events")
    store.store([piece("p1", spec(users=("alice",)), T0), PolicyEventPiece("compiled", NAMESPACE, "p1", T0)])
    store.store([PolicyDeletion(NAMESPACE, "p1", T0), PolicyEventPiece("deleted", NAMESPACE, "p1", T0)])
    got = [(channel, json.loads(data)) for channel, data in messages(pubsub, 6)]
    change = {"policy": f"{NAMESPACE}/p1", "timestamp": "2025-01-01T00:00:00Z"}
    assert got == [
        ("policy-changes", {"action": "compiled", **change}),
        ("policy-events", {"type": "policy.compiled", **change}),
        ("policy-changes", {"action": "deleted", **change}),
        ("policy-events", {"type": "policy.deleted", **change}),
        ("policy-changes", {"action": "deleted", **change}),
        ("policy-events", {"type": "policy.deleted", **change}),
    ]
    assert list(got[0][1]) == ["action", "policy", "timestamp"]
    assert list(got[1][1]) == ["type", "policy", "timestamp"]
    pubsub.close()


CACHE = {
    "policy:eval:alice:c1": True,
    "policy:eval:alice*:c1": False,
    "user:permissions:alice": True,
    "user:permissions:bob": False,
    "rbac:decision:alice:c1:view": True,
    "rbac:custom:alice:certs": True,
    "rbac:decision:bob:dev,ops:c1": True,
    "rbac:decision:bob:qa:c1": False,
    "rbac:custom:erin:x:ops": True,
    "rbac:custom:erin:x:devops": False,
    "policy:eval:bob:group:dev:c1": True,
    "policy:eval:bob:group:qa:c1": False,
    f"policy:eval:{SA}:c1": True,
    f"rbac:decision:{SA}:c1": True,
    f"user:permissions:{SA}": False,
}


def test_caches_of_old_and_new_subjects_are_dropped_and_no_other(store: RedisStore, raw: redis.Redis) -> None:
    store.store([piece("p1", spec(groups=("dev",)), T0)])
    for key in CACHE:
        raw.set(key, "1")
    # alice and the service account are new, ops is new, dev was there before (old subjects count too)
    store.store([piece("p1", spec(users=("alice",), groups=("ops",), accounts=("bot",)), T0)])
    left = {key for key in CACHE if raw.exists(key)}
    assert left == {key for key, dropped in CACHE.items() if not dropped}


@pytest.mark.parametrize(
    ("suffix", "hit"),
    [
        ("dev", True),
        ("alice:dev", True),
        ("alice:ops,dev:c1", True),
        ("alice:c1:dev,qa", True),
        ("alice:devops:c1", False),
        ("alice:dev-team,ops2", False),
    ],
)
def test_group_cache_key_matching(suffix: str, hit: bool) -> None:
    assert group_cache_hit(suffix, {"dev"}) is hit


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("policy:ns:name", ("ns", "name")),
        ("policy:ns:a:b", ("ns", "a:b")),
        ("policy:ns", None),
        ("policy::x", None),
        ("other:ns:x", None),
        ("policy:ns:", None),
    ],
)
def test_policy_key_parsing(key: str, parsed: tuple[str, str] | None) -> None:
    assert parse_policy_key(key) == parsed


def test_the_validator_restates_every_policy_and_announces_the_expired(store: RedisStore, raw: redis.Redis) -> None:
    window = {"lifecycle": {"validity": {"notBefore": "2025-02-01T00:00:00Z", "notAfter": "2025-03-01T00:00:00Z"}}}
    store.store(
        [
            piece("p1", spec(users=("a",), **window), T0),
            piece("p2", spec(users=("b",), enabled=False), T0),
            piece("p3", spec(users=("c",)), T0),
        ]
    )
    raw.sadd("policies:all", "not-a-policy-key", f"policy:{NAMESPACE}:missing")
    pubsub = raw.pubsub()
    pubsub.subscribe("policy-changes", "policy-events")
    expected = {
        T0: ("Inactive", "Policy not yet valid"),
        T0 + timedelta(days=40): ("Active", "Policy is active"),
        T0 + timedelta(days=70): ("Expired", "Policy expired"),
    }
    for now, (state, message) in expected.items():
        store.store([PolicyValidation(now)])
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert loads(raw.hget(KEY, "status")) == {"state": state, "message": message, "validated_at": stamp}
        assert loads(raw.hget(f"policy:{NAMESPACE}:p2", "status"))["state"] == "Inactive"
        assert loads(raw.hget(f"policy:{NAMESPACE}:p3", "status"))["state"] == "Active"
    got = [(channel, json.loads(data)) for channel, data in messages(pubsub, 2)]
    assert got == [
        ("policy-changes", {"action": "expired", "policy": f"{NAMESPACE}/p1", "timestamp": "2025-03-12T00:00:00Z"}),
        ("policy-events", {"type": "policy.expired", "policy": f"{NAMESPACE}/p1", "timestamp": "2025-03-12T00:00:00Z"}),
    ]
    assert messages(pubsub, 1, timeout=1.0) == []
    assert not raw.exists(f"policy:{NAMESPACE}:missing")
    assert raw.sismember("policies:enabled", KEY)  # the validator changes no index
    pubsub.close()


def test_the_start_up_clean_up_drops_every_policy_evaluation(store: RedisStore, raw: redis.Redis) -> None:
    for i in range(250):
        raw.set(f"policy:eval:user{i}:c", "1")
    store.store([piece("p1", spec(users=("bob",)), T0)])
    raw.set("rbac:decision:alice:c", "1")
    store.store([PolicyEvalCacheReset()])
    assert list(raw.scan_iter(match="policy:eval:*")) == []
    assert raw.exists("rbac:decision:alice:c", KEY) == 2


def test_a_backend_that_keeps_no_policies_ignores_their_pieces() -> None:
    pieces = [
        piece("p1", spec(users=("alice",)), T0),
        PolicyEventPiece("compiled", NAMESPACE, "p1", T0),
        PolicyErrorPiece(NAMESPACE, "p1", PolicyErrorRecord("x", T0)),
        PolicyDeletion(NAMESPACE, "p1", T0),
        PolicyValidation(T0),
        PolicyEvalCacheReset(),
    ]
    assert render_batch(pieces, 0, 1000) is None
