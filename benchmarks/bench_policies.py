"""Access policies: 1,000 MonitorAccessPolicies of 100 subjects each, compiled and stored.

Each policy is compiled (``compile_policy``) and stored on its own (``RedisStore.store`` of one
``PolicyPiece``, as one reconcile does: read the previous data, one pipeline of hash, indexes and
sets, then the two SCAN passes of the cache invalidation). Printed beside: writing the same keys
(hash fields, index sets and sorted sets, global sets) with a bare redis-py pipeline per policy,
in the same run against the same redis-server. Subjects come from a pool of 2,000 users and 500
groups (50 of each per policy), each policy also names 2 custom types of 20.

Run: ``python benchmarks/bench_policies.py`` (starts its own redis-server).
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

import redis
from clusterpulse_model.pieces import PolicyPiece
from clusterpulse_model.policy import PolicyStatusRecord
from clusterpulse_policy.compiler import compile_policy
from clusterpulse_policy.spec import parse_spec
from clusterpulse_redis import RedisSettings, RedisStore
from clusterpulse_testing.servers import redis_process

from clusterpulse_core.serde import dumps

POLICIES = 1000
USERS_PER_POLICY = GROUPS_PER_POLICY = 50
ROUNDS = 3
#: The bound the figure is printed against: at most this many times the raw pipeline's time (ours also
#: compiles, reads the previous version and runs the two SCAN passes of the cache invalidation).
TARGET_RATIO = 5.0
NOW = datetime(2025, 1, 1, tzinfo=UTC)


def specs() -> list[dict[str, Any]]:
    """The policy specs (fixed seed)."""
    rng = random.Random(23)
    users = [f"user-{i:04d}@example.com" for i in range(2000)]
    groups = [f"group-{i:03d}" for i in range(500)]
    types = [f"type{i:02d}" for i in range(20)]
    return [
        {
            "identity": {
                "subjects": {
                    "users": rng.sample(users, USERS_PER_POLICY),
                    "groups": rng.sample(groups, GROUPS_PER_POLICY),
                },
                "priority": rng.randint(1, 10000),
            },
            "access": {"effect": rng.choice(["Allow", "Deny"])},
            "scope": {
                "clusters": {
                    "default": "none",
                    "rules": [
                        {
                            "selector": {"matchPattern": "^prod-"},
                            "resources": [
                                {
                                    "type": "pods",
                                    "visibility": "filtered",
                                    "filters": {"namespaces": {"allowed": ["team-*"], "denied": ["kube-system"]}},
                                },
                                *({"type": t} for t in rng.sample(types, 2)),
                            ],
                        }
                    ],
                }
            },
        }
        for _ in range(POLICIES)
    ]


def ours(store: RedisStore, bodies: list[dict[str, Any]]) -> float:
    """Seconds to compile and store every policy, one store call each."""
    started = time.perf_counter()
    for i, body in enumerate(bodies):
        policy = compile_policy(f"policy-{i:04d}", "clusterpulse", parse_spec({"spec": body}), NOW)
        store.store([PolicyPiece(policy, PolicyStatusRecord.of(policy, "Active", "Policy is active"))])
    return time.perf_counter() - started


def raw(client: redis.Redis, bodies: list[dict[str, Any]]) -> float:
    """Seconds to write the same keys with a bare pipeline per policy (the compiled JSON made beforehand)."""
    compiled = [
        compile_policy(f"policy-{i:04d}", "clusterpulse", parse_spec({"spec": body}), NOW)
        for i, body in enumerate(bodies)
    ]
    data = [dumps(policy) for policy in compiled]
    started = time.perf_counter()
    for policy, value in zip(compiled, data, strict=True):
        key = policy.key
        pipe = client.pipeline(transaction=False)
        pipe.hset(
            key,
            mapping={
                "data": value,
                "priority": str(policy.priority),
                "effect": policy.effect,
                "enabled": "true",
                "hash": policy.hash,
                "compiled_at": "2025-01-01T00:00:00Z",
                "status": b"{}",
            },
        )
        for kind, names in (
            ("user", policy.users),
            ("group", policy.groups),
            ("customtype", policy.custom_resource_types),
        ):
            for name in names:
                pipe.sadd(f"policy:{kind}:{name}", key)
                pipe.zadd(f"policy:{kind}:{name}:sorted", {key: policy.priority})
        pipe.sadd("policies:all", key)
        pipe.zadd("policies:by:priority", {key: policy.priority})
        pipe.sadd("policies:enabled", key)
        pipe.sadd(f"policies:effect:{policy.effect.lower()}", key)
        pipe.execute()
    return time.perf_counter() - started


def main() -> int:
    binary = shutil.which("redis-server")
    if not binary:
        print("redis-server is not installed: sudo apt-get install -y redis-server", file=sys.stderr)
        return 2
    server = redis_process(binary).start()
    try:
        url = f"redis://127.0.0.1:{server.port}/0"
        client = redis.Redis.from_url(url)
        store = RedisStore(RedisSettings(url=url), clock=lambda: NOW)
        bodies = specs()
        timings: list[float] = []
        baseline: list[float] = []
        for _ in range(ROUNDS):
            client.flushall()
            timings.append(ours(store, bodies))
            keys = client.dbsize()
            client.flushall()
            baseline.append(raw(client, bodies))
            assert client.dbsize() == keys, (client.dbsize(), keys)
        mine, bare = statistics.median(timings), statistics.median(baseline)
        rate = POLICIES / mine
        print(
            f"{POLICIES} policies x {USERS_PER_POLICY + GROUPS_PER_POLICY} subjects (+2 custom types) "
            f"= {keys} keys; median of {ROUNDS} rounds"
        )
        print(f"compile + RedisStore.store : {mine:7.2f} s  ({rate:7.0f} policies/s)")
        print(f"raw pipeline, same keys    : {bare:7.2f} s  ({POLICIES / bare:7.0f} policies/s; compile not timed)")
        ratio = mine / bare
        print(
            f"ratio                      : {ratio:7.1f} x the raw pipeline's time  (bound <= {TARGET_RATIO:g} x: "
            f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})"
        )
        store.close()
        client.close()
        return 0
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main())
