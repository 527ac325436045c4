"""Shared helpers of the tests in this folder (classes, constants, builders; fixtures are in conftest.py)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.plugin import ClusterPlugin
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core.context import Runtime
from clusterpulse_core.runtime.bootstrap import Outcome, reconcile_object
from clusterpulse_core.serde import loads

HUB_NAMESPACE = "clusterpulse"


CC_API = f"{CLUSTER_CONNECTION.group}/{CLUSTER_CONNECTION.version}"


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
    """A hub Secret holding ``token`` (no ``token`` key when None), the CA of the emulators' HTTPS
    (``ca.crt``, unless given) and any extra keys."""
    data = {"ca.crt": loopback_ca().ca_pem, **extra}
    if token is not None:
        data["token"] = token
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def cluster_connection(name: str, spec: Mapping[str, Any], namespace: str = HUB_NAMESPACE) -> dict[str, Any]:
    """A ClusterConnection object."""
    return {
        "apiVersion": CC_API,
        "kind": "ClusterConnection",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }


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
