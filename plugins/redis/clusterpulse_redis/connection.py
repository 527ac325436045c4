"""Building the redis-py client from :class:`RedisSettings` (pool, retries, TLS, Redis Cluster)."""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from clusterpulse_redis.settings import RedisSettings

#: URL schemes that select a Redis Cluster, and the plain scheme redis-py parses them as.
CLUSTER_SCHEMES = {"redis+cluster://": "redis://", "rediss+cluster://": "rediss://"}

#: Either client: one server, or a Redis Cluster (which routes each key to its slot's node).
Client = redis.Redis | redis.RedisCluster


def is_cluster(settings: RedisSettings) -> bool:
    """Whether the settings select a Redis Cluster (``cluster = true`` or a ``+cluster`` URL)."""
    return settings.cluster or settings.url.startswith(tuple(CLUSTER_SCHEMES))


def _retry(settings: RedisSettings) -> Retry:
    return Retry(
        ExponentialBackoff(cap=settings.retry_backoff_cap, base=settings.retry_backoff_base), settings.retry_attempts
    )


def _tls(settings: RedisSettings) -> dict[str, Any]:
    """Verified TLS, said explicitly: the certificate must chain to the CA and name the host."""
    options: dict[str, Any] = {"ssl_cert_reqs": "required", "ssl_check_hostname": True}
    if settings.tls_ca_file:
        options["ssl_ca_certs"] = settings.tls_ca_file
    return options


def _credentials(settings: RedisSettings) -> dict[str, Any]:
    """The user name and password settings (a URL naming its own is refused with them by the settings)."""
    return {"username": settings.username or None, "password": settings.password or None}


def connect(settings: RedisSettings) -> Client:
    """A client over a bounded pool that retries connection errors with backoff."""
    if is_cluster(settings):
        return connect_cluster(settings)
    common: dict[str, Any] = {
        "max_connections": settings.pool_size,
        "timeout": settings.pool_timeout,
        "socket_timeout": settings.socket_timeout,
        "socket_connect_timeout": settings.socket_connect_timeout,
        "retry": _retry(settings),
    }
    common.update({k: v for k, v in _credentials(settings).items() if v is not None})
    if settings.url:
        if settings.url.startswith("rediss://"):
            common.update(_tls(settings))
        pool = redis.BlockingConnectionPool.from_url(settings.url, **common)
    else:
        common.update(host=settings.host, port=settings.port, db=settings.db)
        if settings.tls:
            common["connection_class"] = redis.SSLConnection
            common.update(_tls(settings))
        pool = redis.BlockingConnectionPool(**common)
    return redis.Redis(connection_pool=pool)


def connect_cluster(settings: RedisSettings) -> redis.RedisCluster:
    """A Redis Cluster client: discovers the nodes from one startup node, follows MOVED/ASK.

    A cluster has only database 0, so a non-zero ``db`` is refused rather than ignored.
    """
    url = settings.url
    for scheme, plain in CLUSTER_SCHEMES.items():
        if url.startswith(scheme):
            url = plain + url[len(scheme) :]
    common: dict[str, Any] = {
        "max_connections": settings.pool_size,
        "socket_timeout": settings.socket_timeout,
        "socket_connect_timeout": settings.socket_connect_timeout,
        "retry": _retry(settings),
    }
    common.update({k: v for k, v in _credentials(settings).items() if v is not None})
    if url:
        if url.startswith("rediss://"):
            common.update(_tls(settings))
        client = redis.RedisCluster.from_url(url, **common)
    else:
        if settings.db:
            raise ValueError(f"plugins.redis.db: a Redis Cluster has only database 0, got {settings.db}")
        common.update(host=settings.host, port=settings.port, ssl=settings.tls)
        if settings.tls:
            common.update(_tls(settings))
        client = redis.RedisCluster(**common)
    return client


def describe(client: Client) -> str:
    """``host:port/db`` of the client's server (``cluster host:port`` of a cluster), never the password."""
    if isinstance(client, redis.RedisCluster):
        nodes = client.nodes_manager.startup_nodes
        first = next(iter(nodes.values()), None)
        return f"cluster {first.host}:{first.port}" if first is not None else "cluster"
    kwargs = client.connection_pool.connection_kwargs
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
