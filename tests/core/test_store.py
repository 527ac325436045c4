"""Storage fan-out through the store hook: every backend gets every piece; failures surface."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from clusterpulse_model import ClusterStatusRecord
from clusterpulse_model.pieces import ClusterStatusPiece
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend
from prometheus_client import CollectorRegistry

from clusterpulse_core import hookimpl
from clusterpulse_core.pieces import Piece
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.store import Store, StoreError


class FailingBackend(RecordingBackend):
    """A test backend whose storage is down."""

    def store(self, pieces: Sequence[Piece]) -> None:
        raise ConnectionError("backend down")

    def ready(self) -> str | None:
        return "backend down"


PIECE = ClusterStatusPiece("c1", ClusterStatusRecord(health="healthy", message="ok"))


def test_every_backend_receives_every_piece() -> None:
    first, second = RecordingBackend("first"), RecordingBackend("second")
    host = PluginHost([], extra={"a": BackendPlugin(first), "b": BackendPlugin(second)})
    store = Store(host.storage_backends(), registry=CollectorRegistry())
    store.put(PIECE)
    assert first.pieces == [PIECE]
    assert second.pieces == [PIECE]
    assert store.ready() == []


def test_failing_backend_does_not_block_the_other_and_error_reaches_caller() -> None:
    registry = CollectorRegistry()
    failing, healthy = FailingBackend("down"), RecordingBackend("up")
    host = PluginHost([], extra={"a": BackendPlugin(failing), "b": BackendPlugin(healthy)})
    store = Store(host.storage_backends(), registry=registry)
    with pytest.raises(StoreError, match="storage failed: down: backend down") as info:
        store.put(PIECE)
    assert healthy.pieces == [PIECE]
    assert [name for name, _ in info.value.failures] == ["down"]
    assert registry.get_sample_value("clusterpulse_store_errors_total", {"backend": "down"}) == 1.0
    assert store.ready() == ["down: backend down"]


def test_start_failure_stops_started_plugins_and_names_the_culprit() -> None:
    from clusterpulse_core.config import Config
    from clusterpulse_core.kube.client import KubeClient, make_api_client
    from clusterpulse_core.plugins import PluginError
    from clusterpulse_core.runtime.bootstrap import build_runtime, start_plugins

    events: list[str] = []

    class Good:
        @hookimpl
        def clusterpulse_start(self, runtime: object) -> None:
            events.append("good started")

        @hookimpl
        def clusterpulse_stop(self, runtime: object) -> None:
            events.append("good stopped")

    class Bad:
        @hookimpl
        def clusterpulse_start(self, runtime: object) -> None:
            raise RuntimeError("no database")

    host = PluginHost([], extra={"good": Good(), "bad": Bad()})
    runtime = build_runtime(Config(), host, hub=KubeClient(make_api_client("http://127.0.0.1:9")))
    with pytest.raises(PluginError, match=r"plugin 'bad' failed to start: RuntimeError: no database"):
        start_plugins(runtime)
    assert events == ["good started", "good stopped"]
