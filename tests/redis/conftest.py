"""Fixtures of the Redis backend tests: a raw client and stores on the per-test redis-server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
import redis
from clusterpulse_redis import RedisSettings, RedisStore
from redis_seed import T0


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    """A plain redis-py client on the test's empty server, to read back what was stored."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def make_store(redis_url: str) -> Iterator[Callable[..., RedisStore]]:
    """``make_store(clock=..., **settings)``: a RedisStore on the test's server, closed afterwards."""
    made: list[RedisStore] = []

    def factory(clock: Callable[[], datetime] = lambda: T0, **settings: object) -> RedisStore:
        options: dict[str, object] = {"url": redis_url, "retry_backoff_base": 0.01, "retry_backoff_cap": 0.05}
        options.update(settings)
        store = RedisStore(RedisSettings(**options), clock=clock)  # type: ignore[arg-type]
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., RedisStore]) -> RedisStore:
    """A RedisStore with the clock fixed at 2025-01-01T00:00:00Z and default TTLs."""
    return make_store()
