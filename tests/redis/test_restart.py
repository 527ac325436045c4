"""A Redis outage is an error to the caller and readiness reason; the next store restores everything."""

from __future__ import annotations

import pytest
import redis
from clusterpulse_redis import RedisStore, RedisStoreError
from clusterpulse_testing.servers import ServerProcess
from redis_readback import snapshot
from redis_seed import cluster_reconcile, registry_reconcile


def test_store_fails_while_redis_is_down_and_restores_every_key_after(
    redis_server: ServerProcess, store: RedisStore, raw: redis.Redis
) -> None:
    pieces = [*cluster_reconcile("c1"), *registry_reconcile("r1")]
    store.store(pieces)
    keys_before = set(snapshot(raw))
    assert store.ready() is None

    redis_server.stop()
    with pytest.raises(RedisStoreError, match=r"redis at 127\.0\.0\.1:\d+/0: ConnectionError"):
        store.store(pieces)
    reason = store.ready()
    assert reason is not None and "unreachable" in reason

    redis_server.start()  # no persistence: it comes back empty
    assert list(raw.scan_iter()) == []
    store.store(pieces)
    assert store.ready() is None
    assert set(snapshot(raw)) == keys_before
