"""Fixtures of the push-mode tests: a hub emulator with the CRDs, a running ingester over real Redis."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend
from clusterpulse_testing.servers import free_port
from push_support import HUB_NAMESPACE, TOKEN, cluster_connection, collector_secret, secret, write_config

from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, start_plugins, stop_plugins


@pytest.fixture
def hub(kube_api: Callable[..., Any]) -> Any:
    """A hub emulator with the ClusterConnection and MetricSource CRDs and two push clusters' Secrets
    (the hub's credential, and the collector token ``TOKEN + name``)."""
    api = kube_api()
    for kind in (CLUSTER_CONNECTION, METRIC_SOURCE):
        api.add_crd(kind.group, kind.version, kind.kind, kind.plural, short_names=kind.short_names)
    api.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HUB_NAMESPACE}}])
    for name in ("edge", "other"):
        api.create(secret(f"{name}-token", "hub-credential-" + name))  # the hub's own credential
        api.create(collector_secret(name, TOKEN + name))  # the collector token the hub minted
        api.create(cluster_connection(name, "https://127.0.0.1:1", push=True))
    return api


@pytest.fixture
def start_ingester(hub: Any, redis_url: str, tmp_path: Path) -> Iterator[Callable[..., tuple[Runtime, Any]]]:
    """``start_ingester(*backends, **settings)``: plugins started (no controllers) -> (runtime, recording).

    The protocol tests talk plaintext (``tls_enabled = false``, the explicit opt-out); a setting given
    as ``None`` is left at its default (``tls_enabled=None``: TLS with the hub's certificates).
    """
    started: list[Runtime] = []

    def factory(*backends: Any, **settings: Any) -> tuple[Runtime, Any]:
        section = {
            "bind_address": "127.0.0.1",
            "port": free_port(),
            "stop_grace": 2.0,
            "tls_enabled": False,
            **settings,
        }
        section = {key: value for key, value in section.items() if value is not None}
        config_file = write_config(
            tmp_path / f"hub-{len(started)}.toml",
            ["redis", "cluster", "ingester"],
            {"redis": {"url": redis_url}, "ingester": section},
        )
        recording = RecordingBackend()
        config, host = load(str(config_file), env={}, extra_plugins={"recording": BackendPlugin(recording, *backends)})
        runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
        start_plugins(runtime)
        started.append(runtime)
        return runtime, recording

    yield factory
    for runtime in started:
        stop_plugins(runtime)
