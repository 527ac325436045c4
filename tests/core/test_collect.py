"""run_collectors: every collector's pieces in order, the first collector on the calling thread."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import attrs
import pytest

from clusterpulse_core.collect import ClusterTarget, Collector, CriticalCollectorError, run_collectors
from clusterpulse_core.kube.client import KubeClient, make_api_client
from clusterpulse_core.pieces import Piece

REQUEST = contextvars.ContextVar("REQUEST", default="")


@attrs.frozen
class Ran(Piece):
    """Which collector ran, on which thread, seeing which context value."""

    collector: str
    thread: str
    request: str


def recording(name: str) -> Collector:
    def collect(target: ClusterTarget) -> Sequence[Piece]:
        seen = REQUEST.get()
        REQUEST.set(f"changed by {name}")  # must not leak to the caller or the next collector
        return [Ran(name, threading.current_thread().name, seen)]

    return Collector(name, collect)


def failing(name: str, critical: bool) -> Collector:
    def collect(target: ClusterTarget) -> Sequence[Piece]:
        raise RuntimeError(f"{name} broke")

    return Collector(name, collect, critical=critical)


@pytest.fixture
def target() -> ClusterTarget:
    # No call is made: the collectors here do not use the client.
    return ClusterTarget("c1", "http://127.0.0.1:9", KubeClient(make_api_client("http://127.0.0.1:9")))


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="collect")
    yield executor
    executor.shutdown()


def test_the_first_collector_runs_on_the_calling_thread_and_the_others_in_the_pool(
    target: ClusterTarget, pool: ThreadPoolExecutor
) -> None:
    REQUEST.set("reconcile 7")
    report = run_collectors([recording("nodes"), recording("info"), recording("operators")], target, pool)
    ran = [p for p in report.pieces if isinstance(p, Ran)]
    assert [r.collector for r in ran] == ["nodes", "info", "operators"]
    assert ran[0].thread == threading.current_thread().name
    assert all(r.thread.startswith("collect") for r in ran[1:])
    assert {r.request for r in ran} == {"reconcile 7"}  # each in a copy of the caller's context
    assert REQUEST.get() == "reconcile 7"
    assert report.errors == {}


def test_a_failure_of_the_inline_collector_is_reported_like_any_other(
    target: ClusterTarget, pool: ThreadPoolExecutor
) -> None:
    report = run_collectors([failing("nodes", critical=False), recording("info")], target, pool)
    assert report.errors == {"nodes": "nodes broke"}
    assert [p.collector for p in report.pieces if isinstance(p, Ran)] == ["info"]
    with pytest.raises(CriticalCollectorError) as raised:
        run_collectors([failing("nodes", critical=True), failing("info", critical=True)], target, pool)
    assert raised.value.collector == "nodes"  # the first critical failure, in collector order
