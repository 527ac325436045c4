"""Fixtures of the policy tests: a Redis store on the per-test redis-server and a raw client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from clusterpulse_redis import RedisSettings, RedisStore


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    """A plain redis-py client on the test's empty server, to read back what was stored."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:
    """The redis plugin's backend on the test's server."""
    backend = RedisStore(RedisSettings(url=redis_url))
    yield backend
    backend.close()
