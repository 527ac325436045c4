"""Building the redis-py client from :class:`RedisSettings` (pool, retries, TLS)."""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from clusterpulse_redis.settings import RedisSettings


def connect(settings: RedisSettings) -> redis.Redis:
    """A client over a bounded blocking pool that retries connection errors with backoff."""
    common: dict[str, Any] = {
        "max_connections": settings.pool_size,
        "timeout": settings.pool_timeout,
        "socket_timeout": settings.socket_timeout,
        "socket_connect_timeout": settings.socket_connect_timeout,
        "retry": Retry(
            ExponentialBackoff(cap=settings.retry_backoff_cap, base=settings.retry_backoff_base),
            settings.retry_attempts,
        ),
    }
    if settings.url:
        if settings.url.startswith("rediss://") and settings.tls_ca_file:
            common["ssl_ca_certs"] = settings.tls_ca_file
        pool = redis.BlockingConnectionPool.from_url(settings.url, **common)
    else:
        common.update(host=settings.host, port=settings.port, db=settings.db,
                      password=settings.password or None)
        if settings.tls:
            common["connection_class"] = redis.SSLConnection
            if settings.tls_ca_file:
                common["ssl_ca_certs"] = settings.tls_ca_file
        pool = redis.BlockingConnectionPool(**common)
    return redis.Redis(connection_pool=pool)


def describe(client: redis.Redis) -> str:
    """``host:port/db`` of the client's server, for messages (never the password)."""
    kwargs = client.connection_pool.connection_kwargs
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
