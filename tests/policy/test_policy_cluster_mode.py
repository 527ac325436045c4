"""The policy keys on a real three-node Redis Cluster: same keys as on one server, caches on every node."""

from __future__ import annotations

from datetime import UTC, datetime

import redis
from clusterpulse_model.pieces import PolicyDeletion
from clusterpulse_redis import RedisSettings, RedisStore
from clusterpulse_testing.servers import RedisClusterProcesses
from policy_support import NAMESPACE, piece, spec

T0 = datetime(2025, 1, 1, tzinfo=UTC)
KEY = f"policy:{NAMESPACE}:p1"


def test_store_update_and_delete_on_a_redis_cluster(redis_cluster: RedisClusterProcesses) -> None:
    store = RedisStore(RedisSettings(url=redis_cluster.url))
    client = redis.RedisCluster(host="127.0.0.1", port=redis_cluster.ports[0], decode_responses=True)
    try:
        store.store([piece("p1", spec(users=("alice", "bob"), groups=("dev",)), T0)])
        caches = [f"policy:eval:bob:c{i}" for i in range(20)] + [f"rbac:decision:x:dev:c{i}" for i in range(20)]
        for key in caches:
            client.set(key, "1")
        store.store([piece("p1", spec(users=("alice",), groups=("dev",)), T0)])
        assert not any(client.exists(key) for key in caches)
        found = set(client.scan_iter(match="polic*"))
        assert found == {
            KEY,
            "policies:all",
            "policies:by:priority",
            "policies:enabled",
            "policies:effect:allow",
            "policy:user:alice",
            "policy:user:alice:sorted",
            "policy:group:dev",
            "policy:group:dev:sorted",
        }
        store.store([PolicyDeletion(NAMESPACE, "p1", T0)])
        assert set(client.scan_iter(match="polic*")) == set()
    finally:
        store.close()
        client.close()
