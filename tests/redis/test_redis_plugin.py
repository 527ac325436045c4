"""The plugin is found through its entry point and configured by the core loader and env vars."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from clusterpulse_redis import RedisSettings, RedisStore
from clusterpulse_redis.plugin import RedisPlugin
from clusterpulse_testing.servers import ServerProcess, redis_process, require_binary
from redis_seed import cluster_reconcile

from clusterpulse_core.config import ConfigError, CoreSettings, RawConfig, build_settings, finish_config, masked
from clusterpulse_core.plugins import PluginHost


def test_entry_point_provides_the_settings_class_and_a_backend(redis_server: ServerProcess) -> None:
    host = PluginHost(["redis"])
    assert isinstance(host.plugin("redis"), RedisPlugin)
    assert host.settings_classes() == {"redis": RedisSettings}
    env = {"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(redis_server.port)}
    raw = RawConfig(core=CoreSettings(plugins=("redis",)), plugin_sections={"redis": {"cache_ttl": 120}}, source="")
    host.configure(finish_config(raw, host.settings_classes(), env))
    backends = host.storage_backends()
    assert [type(b) for b in backends] == [RedisStore]
    backend = backends[0]
    try:
        assert backend.ready() is None
        backend.store(cluster_reconcile("c1"))
        assert 115 <= backend.client.ttl("cluster:c1:node:c1-n0") <= 120
    finally:
        backend.close()


def test_upstream_env_vars_override_the_file() -> None:
    env = {
        "REDIS_HOST": "redis.prod",
        "REDIS_PORT": "7000",
        "REDIS_PASSWORD": "s3cret",
        "REDIS_DB": "2",
        "CACHE_TTL": "30",
        "METRICS_RETENTION": "abc",
    }
    settings = build_settings(RedisSettings, {"host": "from-file", "metrics_retention": 900}, "plugins.redis", env)
    assert (settings.host, settings.port, settings.password, settings.db) == ("redis.prod", 7000, "s3cret", 2)
    assert settings.cache_ttl == 60  # raised to the minimum
    assert settings.metrics_retention == 900  # unparsable env value: the file's value stays
    assert masked(settings)["password"] == "********"


def test_defaults_match_upstream() -> None:
    settings = build_settings(RedisSettings, {}, "plugins.redis", {})
    assert (settings.host, settings.port, settings.password, settings.db) == ("redis", 6379, "", 0)
    assert (settings.cache_ttl, settings.metrics_retention) == (600, 3600)


def test_file_values_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"plugins\.redis\.cache_ttl: expected a value >= 60"):
        build_settings(RedisSettings, {"cache_ttl": 10}, "plugins.redis", {})
    with pytest.raises(ConfigError, match=r"plugins\.redis\.port: expected int"):
        build_settings(RedisSettings, {"port": "abc"}, "plugins.redis", {})


@pytest.fixture
def password_redis() -> Iterator[ServerProcess]:
    """A second redis-server that requires a password."""
    server = redis_process(require_binary("redis-server", "redis-server"), password="pw-123")
    server.start()
    yield server
    server.cleanup()


def test_host_port_password_and_db_are_used(password_redis: ServerProcess) -> None:
    good = RedisStore(RedisSettings(host="127.0.0.1", port=password_redis.port, password="pw-123", db=3))
    bad = RedisStore(RedisSettings(host="127.0.0.1", port=password_redis.port, password="wrong", retry_attempts=0))
    try:
        assert good.ready() is None
        good.store(cluster_reconcile("c1"))
        assert good.client.connection_pool.connection_kwargs["db"] == 3
        assert good.client.exists("cluster:c1:spec") == 1
        reason = bad.ready()
        assert reason is not None and "pw-123" not in reason and "wrong" not in reason
    finally:
        good.close()
        bad.close()
