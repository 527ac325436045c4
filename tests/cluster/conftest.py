"""Fixtures of the cluster plugin tests: a hub emulator, managed-cluster emulators, real Redis.

Reconciles run through the real bootstrap path (config file -> plugins from their entry
points -> runtime -> ``reconcile_object``) with the real ``redis`` plugin as storage."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
from cluster_support import (
    HUB_NAMESPACE,
    FakeClock,
    Harness,
    hub_objects,
)
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_redis.store import RedisStore

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load


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

    def factory(
        settings: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, object] | None = None,
        clock: FakeClock | None = None,
    ) -> Harness:
        lines = [
            "[clusterpulse]",
            'plugins = ["redis", "cluster"]',
            f'namespace = "{HUB_NAMESPACE}"',
            "[plugins.redis]",
            f'url = "{redis_url}"',
            "[plugins.cluster]",
        ]
        lines += [f"{key} = {value!r}" for key, value in (settings or {}).items()]
        config_file = tmp_path / f"clusterpulse-{len(made)}.toml"
        config_file.write_text("\n".join(lines) + "\n")
        # No ingester runs here to publish its CA: push clusters are deployed plaintext unless a test
        # turns TLS on (and then provides the hub's CA ConfigMap itself).
        config, host = load(str(config_file), env={"INGESTER_TLS_ENABLED": "false", **(env or {})}, extra_plugins=extra)
        runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
        harness = Harness(hub, runtime, redis.Redis.from_url(redis_url), clock or FakeClock())
        harness.plugin.clock = harness.clock
        # One clock for collecting and storing: a sample's score is its collection time, and the
        # store trims the series by its own time.
        for backend in runtime.store.backends:
            if isinstance(backend, RedisStore):
                backend.clock = harness.clock
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
