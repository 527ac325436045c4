"""``[plugins.redis]``: where Redis is, how to reach it, and the TTLs that shape keys."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import attrs

from clusterpulse_core.config import setting

#: The URL schemes the plugin connects with (redis-py's, and the Redis Cluster forms).
URL_SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")


def check_url(url: str) -> None:
    """Raise ``ValueError`` for a URL the plugin cannot use: unknown scheme, no host, a db that is no number."""
    if not url:
        return
    parts = urlsplit(url)
    if parts.scheme not in URL_SCHEMES:
        raise ValueError(f"expected a URL starting with {', '.join(s + '://' for s in URL_SCHEMES)}, got {url!r}")
    if parts.scheme == "unix":
        return
    if not parts.hostname:
        raise ValueError(f"expected a host in the URL, e.g. redis://redis:6379/0, got {url!r}")
    try:
        parts.port  # noqa: B018 - raises for a port that is no number
    except ValueError as exc:
        raise ValueError(f"the port is not a number in {url!r}") from exc
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ValueError(f"the database (the URL's path) must be a number such as /0, got {url!r}")
    if db and parts.scheme.endswith("+cluster") and db != "0":
        raise ValueError(f"a Redis Cluster has only database 0, got {url!r}")


@attrs.frozen
class RedisSettings:
    """Connection and key-lifetime settings; the upstream env vars override the file."""

    url: str = setting(
        "",
        help="redis:// or rediss:// URL (redis+cluster:// or rediss+cluster:// for a Redis "
        "Cluster); when set it overrides host/port/db (a password in it is masked by "
        "config show; prefer REDIS_USERNAME/REDIS_PASSWORD)",
        check=check_url,
    )
    host: str = setting("redis", env="REDIS_HOST", help="Redis host")
    port: int = setting(6379, env="REDIS_PORT", help="Redis port")
    username: str = setting(
        "",
        env="REDIS_USERNAME",
        help="Redis ACL user name (empty: the default user); also used with url when the URL names none",
    )
    password: str = setting(
        "",
        env="REDIS_PASSWORD",
        secret=True,
        help="Redis password (empty: none); also used with url when the URL has none",
    )
    db: int = setting(0, env="REDIS_DB", help="logical database number")
    cluster: bool = setting(
        False,
        help="Redis Cluster: host/port (or url) is one startup node; keys keep "
        "their names (no hash tags), writes are grouped per node",
    )
    tls: bool = setting(False, help="connect with TLS")
    tls_ca_file: str = setting(
        "",
        help="CA bundle to verify the server certificate (empty: system CAs); the "
        "certificate must also name the host connected to",
    )
    cache_ttl: int = setting(600, env="CACHE_TTL", minimum=60, help="TTL of the current-state keys, seconds")
    metrics_retention: int = setting(
        3600,
        env="METRICS_RETENTION",
        minimum=300,
        help="TTL and trimming window of the time-series sorted sets, seconds",
    )
    pool_size: int = setting(20, minimum=1, help="maximum connections in the pool")
    pool_timeout: float = setting(5.0, help="seconds to wait for a free pooled connection")
    retry_attempts: int = setting(3, minimum=0, help="retries of a command after a connection error")
    retry_backoff_base: float = setting(0.05, help="first retry delay, seconds (doubles per retry)")
    retry_backoff_cap: float = setting(2.0, help="largest retry delay, seconds")
    socket_timeout: float = setting(5.0, help="read/write timeout of one command, seconds")
    socket_connect_timeout: float = setting(5.0, help="connect timeout, seconds")
    restart_check_interval: float = setting(
        1.0, help="how often to check whether Redis lost its data (then everything is queued again); 0 = never"
    )

    def settings_problems(self) -> Iterator[str]:
        """Credentials given twice: the URL's and the settings' (one would silently win)."""
        if not self.url:
            return
        parts = urlsplit(self.url)
        if parts.password and self.password:
            yield "url: has a password and password (REDIS_PASSWORD) is set too: keep one"
        if parts.username and self.username:
            yield "url: names a user and username (REDIS_USERNAME) is set too: keep one"

    def settings_warnings(self) -> Iterator[str]:
        """Insecure choices: credentials over plain TCP."""
        plain = not (self.url.startswith(("rediss://", "rediss+cluster://", "unix://")) if self.url else self.tls)
        has_password = bool(self.password or (self.url and urlsplit(self.url).password))
        if plain and has_password:
            yield (
                "password: sent to Redis over plain TCP (set tls = true, or use a rediss:// URL) "
                "(docs/security.md#credentials-of-redis-and-victoriametrics)"
            )
