"""The ``redis`` plugin: provides :class:`RedisStore` through the store hook."""

from __future__ import annotations

from collections.abc import Sequence

import redis
from clusterpulse_model import Alert
from clusterpulse_model.policy import StoredPolicy

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config
from clusterpulse_core.context import Runtime
from clusterpulse_core.store import StorageBackend
from clusterpulse_redis import keys
from clusterpulse_redis.alerts import read_alerts
from clusterpulse_redis.connection import connect
from clusterpulse_redis.policies import POLICIES_ALL, stored_policies
from clusterpulse_redis.restart import RestartWatcher
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_redis.store import RedisStore

#: ``clusterpulse_stored_names`` index -> the Redis set holding it.
STORED_INDEXES = {
    "clusters": keys.CLUSTERS_ALL,
    "registries": keys.REGISTRIES_ALL,
    "metricsources": keys.METRICSOURCES_ALL,
    "policies": POLICIES_ALL,
}


class RedisPlugin:
    """Current state in Redis (the ClusterPulse API contract, docs/compatibility.md#redis-keys)."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.settings: RedisSettings | None = None
        self.watchers: list[RestartWatcher] = []

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.redis]`` is validated by :class:`RedisSettings`."""
        return RedisSettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: RedisSettings) -> None:
        """Keep the validated settings for the backend."""
        self.settings = settings

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[StorageBackend]:
        """One :class:`RedisStore` (default settings when the plugin was not configured)."""
        return [RedisStore(self.settings)]

    @hookimpl
    def clusterpulse_start(self, runtime: Runtime) -> None:
        """Count skipped (invalid) names; watch for a Redis that lost its data (then resync everything)."""
        interval = (self.settings or RedisSettings()).restart_check_interval
        for store in runtime.store.backends:
            if isinstance(store, RedisStore):
                store.names.register_metrics(runtime.metrics)
                if interval > 0:
                    watcher = RestartWatcher(store.client, runtime.storage_lost, interval)
                    watcher.start()
                    self.watchers.append(watcher)

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        """Stop the restart watchers."""
        for watcher in self.watchers:
            watcher.stop()
        self.watchers.clear()

    @hookimpl
    def clusterpulse_stored_names(self, index: str) -> Sequence[str] | None:
        """``clusters:all``, ``registries:all``, ``metricsources:all`` and ``policies:all`` (as
        ``<ns>/<name>``), read on a short-lived connection; None for another index."""
        key = STORED_INDEXES.get(index)
        if key is None:
            return None
        client = connect(self.settings or RedisSettings())
        try:
            members = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in client.smembers(key))
        finally:
            client.close()
            if isinstance(client, redis.Redis):
                client.connection_pool.disconnect()
        if index == "policies":  # policy keys: policy:<ns>:<name>
            return [m.removeprefix("policy:").replace(":", "/", 1) for m in members if m.startswith("policy:")]
        return members

    @hookimpl(optionalhook=True)  # declared by the alerts plugin
    def clusterpulse_stored_alerts(self) -> Sequence[Alert]:
        """The ``alerts:<c>:<id>`` hashes in Redis, read on a short-lived connection."""
        client = connect(self.settings or RedisSettings())
        try:
            return read_alerts(client)
        finally:
            client.close()
            client.connection_pool.disconnect()

    @hookimpl(optionalhook=True)  # declared by the policy plugin
    def clusterpulse_stored_policies(
        self, user: str, groups: Sequence[str], service_account: bool
    ) -> Sequence[StoredPolicy]:
        """The principal's policies from the ``policy:{user,group,sa}:<x>:sorted`` indexes (short-lived connection)."""
        client = connect(self.settings or RedisSettings())
        try:
            return stored_policies(client, user, groups, service_account)
        finally:
            client.close()
            if isinstance(client, redis.Redis):
                client.connection_pool.disconnect()
