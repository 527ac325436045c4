"""Fixtures of the cluster plugin tests: a hub emulator, managed-cluster emulators, real Redis.

Reconciles run through the real bootstrap path (config file -> plugins from their entry
points -> runtime -> ``reconcile_object``) with the real ``redis`` plugin as storage.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.plugin import ClusterPlugin

from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import Outcome, build_runtime, load, reconcile_object
from clusterpulse_core.serde import loads

HUB_NAMESPACE = "clusterpulse"
CC_API = f"{CLUSTER_CONNECTION.group}/{CLUSTER_CONNECTION.version}"
#: The clock of the Redis golden examples (redis.md §14).
EXAMPLE_CLOCK = datetime(2025, 1, 1, tzinfo=UTC)


class FakeClock:
    """A settable clock for the plugin (datetime) and the circuit breakers (monotonic seconds)."""

    def __init__(self, start: datetime = EXAMPLE_CLOCK) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        """Seconds since the epoch of the current fake time."""
        return self.now.timestamp()

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        self.now += timedelta(seconds=seconds)


def secret(name: str, token: str | None, namespace: str = HUB_NAMESPACE, **extra: str) -> dict[str, Any]:
    """A hub Secret holding ``token`` (no ``token`` key when None) and any extra keys."""
    data = dict(extra)
    if token is not None:
        data["token"] = token
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def cluster_connection(name: str, spec: Mapping[str, Any], namespace: str = HUB_NAMESPACE) -> dict[str, Any]:
    """A ClusterConnection object."""
    return {"apiVersion": CC_API, "kind": "ClusterConnection",
            "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}


class Harness:
    """A runtime wired to a hub emulator and Redis, with helpers to reconcile and read back."""

    def __init__(self, hub: Any, runtime: Runtime, redis_client: redis.Redis, clock: FakeClock) -> None:
        self.hub = hub
        self.runtime = runtime
        self.redis = redis_client
        self.clock = clock

    @property
    def plugin(self) -> ClusterPlugin:
        """The loaded cluster plugin."""
        plugin = self.runtime.plugins.plugin("cluster")
        assert isinstance(plugin, ClusterPlugin)
        return plugin

    def add(self, name: str, endpoint: str, token: str | None = "token", **spec: Any) -> dict[str, Any]:
        """Create a Secret ``<name>-token`` (unless ``token`` is None) and a ClusterConnection."""
        if token is not None:
            self.hub.create(secret(f"{name}-token", token))
        body = {"endpoint": endpoint, "credentialsRef": {"name": f"{name}-token"}, **spec}
        return self.hub.create(cluster_connection(name, body))

    def cr(self, name: str) -> dict[str, Any]:
        """The ClusterConnection as the hub holds it now."""
        obj = self.hub.get(CC_API, "clusterconnections", name, HUB_NAMESPACE)
        assert obj is not None, f"ClusterConnection {name} not found"
        return obj

    def reconcile(self, name: str) -> Outcome:
        """Reconcile the ClusterConnection ``name`` once, as the runtime does."""
        return reconcile_object(self.runtime, "cluster", CLUSTER_CONNECTION, self.cr(name))

    def forget(self, name: str) -> Outcome:
        """Run the deletion path (object with a deletionTimestamp)."""
        obj = self.cr(name)
        obj["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
        return reconcile_object(self.runtime, "cluster", CLUSTER_CONNECTION, obj)

    def json(self, key: str) -> Any:
        """The JSON value of a Redis string key (None when absent)."""
        raw = self.redis.get(key)
        return None if raw is None else loads(raw)

    def hash_json(self, key: str, field: str) -> Any:
        """The JSON held by one hash field."""
        raw = self.redis.hget(key, field)
        return None if raw is None else loads(raw)

    def events(self, name: str) -> list[Any]:
        """``events:<name>``, newest first."""
        return [loads(item) for item in self.redis.lrange(f"events:{name}", 0, -1)]


def hub_objects() -> list[dict[str, Any]]:
    """The watch namespace."""
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HUB_NAMESPACE}}]


@pytest.fixture
def hub(kube_api: Callable[..., Any]) -> Any:
    """A hub emulator serving the ClusterConnection CRD, with the ``clusterpulse`` namespace."""
    api = kube_api()
    kind = CLUSTER_CONNECTION
    api.add_crd(kind.group, kind.version, kind.kind, kind.plural, short_names=kind.short_names)
    api.seed(hub_objects())
    return api


@pytest.fixture
def make_harness(hub: Any, redis_url: str, tmp_path: Path) -> Iterator[Callable[..., Harness]]:
    """``make_harness(settings={...}, env={...}, extra={...}, pool=...)``: a Harness on ``hub``."""
    made: list[Harness] = []

    def factory(settings: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
                extra: Mapping[str, object] | None = None, clock: FakeClock | None = None) -> Harness:
        lines = ["[clusterpulse]", 'plugins = ["redis", "cluster"]', f'namespace = "{HUB_NAMESPACE}"',
                 "[plugins.redis]", f'url = "{redis_url}"', "[plugins.cluster]"]
        lines += [f"{key} = {value!r}" for key, value in (settings or {}).items()]
        config_file = tmp_path / f"clusterpulse-{len(made)}.toml"
        config_file.write_text("\n".join(lines) + "\n")
        config, host = load(str(config_file), env=dict(env or {}), extra_plugins=extra)
        runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
        harness = Harness(hub, runtime, redis.Redis.from_url(redis_url), clock or FakeClock())
        harness.plugin.clock = harness.clock
        made.append(harness)
        return harness

    yield factory
    for harness in made:
        harness.runtime.store.close()
        harness.runtime.pool.close()
        harness.redis.close()


@pytest.fixture
def harness(make_harness: Callable[..., Harness]) -> Harness:
    """A Harness with default settings and a fake clock at 2025-01-01T00:00:00Z."""
    return make_harness()
