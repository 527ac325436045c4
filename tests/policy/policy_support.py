"""Helpers of the policy tests: compile a spec, read every key back, collect published messages."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import redis
from clusterpulse_model.pieces import PolicyPiece
from clusterpulse_model.policy import CompiledPolicy, PolicyStatusRecord, policy_state
from clusterpulse_policy.compiler import compile_policy
from clusterpulse_policy.spec import parse_spec

NAMESPACE = "clusterpulse"


def spec(
    users: tuple[str, ...] = (),
    groups: tuple[str, ...] = (),
    accounts: tuple[str, ...] = (),
    types: tuple[str, ...] = (),
    effect: str = "Allow",
    priority: int = 100,
    enabled: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A policy spec with these subjects and custom types (one rule on every cluster)."""
    rules = [{"selector": {"matchPattern": ".*"}, "resources": [{"type": t} for t in types]}]
    return {
        "identity": {
            "subjects": {
                "users": list(users),
                "groups": list(groups),
                "serviceAccounts": [{"name": a} for a in accounts],
            },
            "priority": priority,
        },
        "access": {"effect": effect, "enabled": enabled},
        "scope": {"clusters": {"default": "none", "rules": rules}},
        **extra,
    }


def compiled(name: str, body: Mapping[str, Any], now: datetime) -> CompiledPolicy:
    """The compiled policy of a spec."""
    return compile_policy(name, NAMESPACE, parse_spec({"spec": dict(body)}), now)


def piece(name: str, body: Mapping[str, Any], now: datetime) -> PolicyPiece:
    """The piece the reconcile stores for a spec."""
    policy = compiled(name, body, now)
    state, message = policy_state(policy.enabled, policy.not_before, policy.not_after, now)
    return PolicyPiece(policy, PolicyStatusRecord.of(policy, state, message))


def snapshot(client: redis.Redis) -> dict[str, Any]:
    """Every key with its members: sets as sets, zsets as {member: score}, hashes as field names."""
    out: dict[str, Any] = {}
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        if kind == "set":
            out[key] = client.smembers(key)
        elif kind == "zset":
            out[key] = dict(client.zrange(key, 0, -1, withscores=True))  # type: ignore[arg-type]
        elif kind == "hash":
            out[key] = set(client.hkeys(key))  # type: ignore[arg-type]
        else:
            out[key] = client.get(key)
    return out


def messages(pubsub: Any, count: int, timeout: float = 10.0) -> list[tuple[str, str]]:
    """The next ``count`` published ``(channel, data)``; fewer when ``timeout`` passes first."""
    found: list[tuple[str, str]] = []
    deadline = time.monotonic() + timeout
    while len(found) < count and time.monotonic() < deadline:
        message = pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
        if message is not None:
            found.append((message["channel"], message["data"]))
    return found
