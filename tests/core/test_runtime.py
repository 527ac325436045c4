"""The controller runtime end to end: manager, informer, controller and probes on the API emulator.

A test-local plugin declares the kind ``Widget`` (group test.clusterpulse.io) and records every
reconcile and forget; the manager runs it against the Kubernetes API emulator over HTTP.

This file is also the child process of the SIGTERM test (``python test_runtime.py URL DIR``).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config, ConfigError, CoreSettings
from clusterpulse_core.context import ObjectLogger, ReconcileContext, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind, TerminalError
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.logs import CURRENT_OBJECT, ObjectFilter
from clusterpulse_core.pieces import Piece
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime
from clusterpulse_core.runtime.controller import spread_offset
from clusterpulse_core.runtime.informer import Informer
from clusterpulse_core.runtime.manager import GC_YOUNG_THRESHOLD, Manager, kind_workers
from clusterpulse_core.runtime.probes import parse_bind_address

NAMESPACE = "clusterpulse"
GROUP = "test.clusterpulse.io"
API_VERSION = f"{GROUP}/v1"
WAIT = 15.0

WIDGET = ResourceKind(
    group=GROUP,
    version="v1",
    kind="Widget",
    plural="widgets",
    schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    workers=2,
)

Behaviour = Callable[[int, Mapping[str, Any]], "ReconcileResult | None"]


class WidgetPlugin:
    """Owns ``Widget``; records reconciles ``(name, generation)`` and forgets; behaviour per name."""

    clusterpulse_api_version = 1

    def __init__(
        self, behaviours: Mapping[str, Behaviour] | None = None, marker_dir: str = "", sleep: float = 0.0
    ) -> None:
        self.behaviours = dict(behaviours or {})
        self.marker_dir = marker_dir
        self.sleep = sleep
        self.reconciled: list[tuple[str, int]] = []
        self.forgotten: list[str] = []
        self.lock = threading.Lock()

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        return [WIDGET]

    @hookimpl
    def clusterpulse_reconcile(
        self, kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext
    ) -> ReconcileResult | None:
        meta = obj["metadata"]
        name = str(meta["name"])
        with self.lock:
            self.reconciled.append((name, int(meta.get("generation") or 0)))
            attempt = self.attempts(name)
        self.mark(f"{name}.started")
        if self.sleep:
            time.sleep(self.sleep)
        behaviour = self.behaviours.get(name)
        result = behaviour(attempt, obj) if behaviour else None
        self.mark(f"{name}.done")
        return result

    @hookimpl
    def clusterpulse_forget(self, kind: ResourceKind, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        with self.lock:
            self.forgotten.append(ref.name)
        return True

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        done = [p.name for p in Path(self.marker_dir).glob("*.done")] if self.marker_dir else []
        self.mark("stopped", ",".join(sorted(done)))

    def attempts(self, name: str) -> int:
        return sum(1 for seen, _gen in self.reconciled if seen == name)

    def generations(self, name: str) -> list[int]:
        with self.lock:
            return [gen for seen, gen in self.reconciled if seen == name]

    def mark(self, name: str, text: str = "") -> None:
        if self.marker_dir:
            Path(self.marker_dir, name).write_text(text)


class FlakyBackend:
    """A storage backend whose readiness the test switches."""

    name = "flaky"

    def __init__(self) -> None:
        self.problem: str | None = "warming up"

    def store(self, pieces: Sequence[Piece]) -> None:
        """Accept everything."""

    def ready(self) -> str | None:
        return self.problem

    def close(self) -> None:
        """Nothing to release."""


class BackendPlugin:
    """Provides one :class:`FlakyBackend`."""

    clusterpulse_api_version = 1

    def __init__(self, backend: FlakyBackend) -> None:
        self.backend = backend

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[FlakyBackend]:
        return [self.backend]


# --------------------------------------------------------------------------- helpers


def settings(**overrides: Any) -> CoreSettings:
    """Core settings with short timings for tests."""
    values: dict[str, Any] = {
        "plugins": (),
        "namespace": NAMESPACE,
        "metrics_bind_address": "0",
        "health_probe_bind_address": "0",
        "queue_base_delay": 0.01,
        "queue_max_delay": 0.2,
        "shutdown_grace": 10.0,
        "lease_duration": 1.0,
        "renew_deadline": 0.6,
        "retry_period": 0.1,
    }
    values.update(overrides)
    return CoreSettings(**values)


def make_manager(
    api_client: kubernetes.client.ApiClient,
    plugins: Mapping[str, object],
    identity: str | None = None,
    **overrides: Any,
) -> Manager:
    host = PluginHost([], extra=plugins)
    runtime = build_runtime(Config(core=settings(**overrides)), host, hub=KubeClient(api_client))
    return Manager(runtime, identity)


def widget(name: str, size: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": NAMESPACE, **meta},
        "spec": {"size": size},
    }


def idle(manager: Manager) -> bool:
    queue = manager.controllers["Widget"].queue
    return len(queue) == 0 and queue.in_flight == 0


def sample(manager: Manager, metric: str, **labels: str) -> float:
    return manager.runtime.metrics.get_sample_value(metric, labels) or 0.0


def http_get(port: int | None, path: str) -> tuple[int, str]:
    assert port is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def hub(kube_api: Any) -> Any:
    api = kube_api()
    api.add_crd(GROUP, "v1", "Widget", "widgets")
    return api


@pytest.fixture
def managers() -> Iterator[list[Manager]]:
    started: list[Manager] = []
    yield started
    for manager in started:
        manager.stop()


@pytest.fixture
def run_widgets(hub: Any, managers: list[Manager]) -> Callable[..., tuple[Manager, WidgetPlugin]]:
    def start(behaviours: Mapping[str, Behaviour] | None = None, **overrides: Any) -> tuple[Manager, WidgetPlugin]:
        plugin = WidgetPlugin(behaviours)
        manager = make_manager(hub.api_client(), {"widgets": plugin}, **overrides)
        managers.append(manager)
        manager.start()
        assert manager.wait_synced(WAIT)
        return manager, plugin

    return start


# --------------------------------------------------------------------------- reconcile


def test_existing_and_created_objects_are_reconciled(hub: Any, run_widgets: Any) -> None:
    hub.create(widget("before"))
    manager, plugin = run_widgets()
    eventually(lambda: plugin.generations("before") == [1], "the listed widget is reconciled", timeout=WAIT)
    hub.create(widget("after"))
    eventually(lambda: plugin.generations("after") == [1], "the created widget is reconciled", timeout=WAIT)
    eventually(
        lambda: sample(manager, "controller_runtime_reconcile_total", controller="widget", result="success") == 2,
        "two successes counted",
        timeout=WAIT,
    )


def test_only_the_watch_namespace_is_watched(hub: Any, run_widgets: Any) -> None:
    other = widget("elsewhere")
    other["metadata"]["namespace"] = "other"
    hub.create(other)
    manager, plugin = run_widgets()
    hub.create(widget("here"))
    eventually(lambda: plugin.generations("here") == [1], "the watched namespace is reconciled", timeout=WAIT)
    eventually(lambda: idle(manager), "queue idle", timeout=WAIT)
    assert plugin.generations("elsewhere") == []
    assert manager.informers["Widget"].get("other", "elsewhere") is None


def test_requeue_after_is_honoured(hub: Any, run_widgets: Any) -> None:
    manager, plugin = run_widgets({"tick": lambda attempt, obj: ReconcileResult(requeue_after=0.05)})
    hub.create(widget("tick"))
    eventually(lambda: len(plugin.generations("tick")) >= 3, "three reconciles from requeue_after", timeout=WAIT)
    assert sample(manager, "controller_runtime_reconcile_total", controller="widget", result="requeue_after") >= 2


def test_an_exception_is_retried_with_backoff_then_forgotten(hub: Any, run_widgets: Any) -> None:
    def flaky(attempt: int, obj: Mapping[str, Any]) -> ReconcileResult | None:
        if attempt <= 2:
            raise RuntimeError(f"boom {attempt}")
        return None

    manager, plugin = run_widgets({"flaky": flaky})
    hub.create(widget("flaky"))
    eventually(
        lambda: sample(manager, "controller_runtime_reconcile_total", controller="widget", result="success") == 1,
        "success after two failures",
        timeout=WAIT,
    )
    assert plugin.generations("flaky") == [1, 1, 1]
    assert sample(manager, "controller_runtime_reconcile_errors_total", controller="widget") == 2
    assert sample(manager, "workqueue_retries_total", name="widget") == 2
    assert manager.controllers["Widget"].queue.num_requeues(ObjectRef("Widget", NAMESPACE, "flaky")) == 0


class TracingPlugin:
    """A third-party wrapper around every reconcile call (as a tracing plugin would be): records
    the call, the object named in the log context around it, and its outcome."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, Any]] = []

    @hookimpl(wrapper=True)
    def clusterpulse_reconcile_call(self, ref: ObjectRef, action: str) -> Generator[None, Any, Any]:
        context = CURRENT_OBJECT.get()
        try:
            result = yield
        except Exception as exc:
            self.calls.append((action, ref.name, context, type(exc).__name__))
            raise
        self.calls.append((action, ref.name, context, result))
        return result


def test_wrappers_run_around_every_reconcile_and_forget_inside_the_object_log_context(
    hub: Any, managers: list[Manager]
) -> None:
    def broken(attempt: int, obj: Mapping[str, Any]) -> ReconcileResult:
        raise TerminalError("cannot ever work")

    plugin, tracer = (
        WidgetPlugin({"broken": broken, "ok": lambda a, o: ReconcileResult(requeue_after=None)}),
        TracingPlugin(),
    )
    manager = make_manager(hub.api_client(), {"widgets": plugin, "tracer": tracer})
    managers.append(manager)
    manager.start()
    assert manager.wait_synced(WAIT)
    hub.create(widget("ok"))
    hub.create(widget("broken"))
    eventually(lambda: len(tracer.calls) == 2, "both reconciles to pass the wrapper", timeout=WAIT)
    hub.delete(API_VERSION, "widgets", "ok", NAMESPACE)
    eventually(lambda: len(tracer.calls) == 3, "the forget to pass the wrapper", timeout=WAIT)
    assert sorted(tracer.calls[:2]) == [
        ("reconcile", "broken", f"Widget {NAMESPACE}/broken", "TerminalError"),
        ("reconcile", "ok", f"Widget {NAMESPACE}/ok", ReconcileResult(requeue_after=None)),
    ]
    assert tracer.calls[2] == ("forget", "ok", f"Widget {NAMESPACE}/ok", True)
    # The wrapper changed nothing the runtime does with the outcome: the terminal error is not retried.
    assert sample(manager, "controller_runtime_reconcile_errors_total", controller="widget") == 1
    assert plugin.forgotten == ["ok"] and CURRENT_OBJECT.get() == ""


def test_a_line_logged_during_a_reconcile_names_its_object_once() -> None:
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(handler.format(record))  # type: ignore[method-assign]
    handler.addFilter(ObjectFilter())
    logger = logging.getLogger("widgets.inner")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    own = ObjectLogger(logger, {"object": f"Widget {NAMESPACE}/w1"})
    try:
        logger.info("outside")
        token = CURRENT_OBJECT.set(f"Widget {NAMESPACE}/w1")
        try:
            logger.info("sizing %d", 3)
            own.info("patched")
        finally:
            CURRENT_OBJECT.reset(token)
    finally:
        logger.removeHandler(handler)
    assert lines == ["outside", f"[Widget {NAMESPACE}/w1] sizing 3", f"[Widget {NAMESPACE}/w1] patched"]


def test_a_terminal_error_is_not_retried(hub: Any, run_widgets: Any) -> None:
    def broken(attempt: int, obj: Mapping[str, Any]) -> ReconcileResult:
        raise TerminalError("cannot ever work")

    manager, plugin = run_widgets({"broken": broken})
    hub.create(widget("broken"))
    eventually(
        lambda: sample(manager, "controller_runtime_reconcile_errors_total", controller="widget") == 1,
        "the terminal error is counted",
        timeout=WAIT,
    )
    eventually(lambda: idle(manager), "queue idle", timeout=WAIT)
    queue = manager.controllers["Widget"].queue
    assert queue.delayed == 0, "nothing scheduled for a retry"
    assert sample(manager, "workqueue_retries_total", name="widget") == 0
    assert plugin.generations("broken") == [1]


def test_a_reported_error_counts_as_error_and_requeues(hub: Any, run_widgets: Any) -> None:
    manager, plugin = run_widgets(
        {"sick": lambda attempt, obj: ReconcileResult(requeue_after=0.05, error="unreachable")}
    )
    hub.create(widget("sick"))
    eventually(lambda: len(plugin.generations("sick")) >= 2, "requeued after a reported error", timeout=WAIT)
    assert sample(manager, "controller_runtime_reconcile_errors_total", controller="widget") >= 1
    assert sample(manager, "controller_runtime_reconcile_total", controller="widget", result="error") >= 1


def test_status_only_updates_do_not_reconcile_but_spec_changes_do(hub: Any, run_widgets: Any) -> None:
    manager, plugin = run_widgets()
    hub.create(widget("w"))
    eventually(lambda: plugin.generations("w") == [1], "first reconcile", timeout=WAIT)
    current = hub.get(API_VERSION, "widgets", "w", NAMESPACE)
    current["status"] = {"phase": "Ready"}
    hub.update(current)
    # A sentinel created after the status write: once it is reconciled and the queue is idle,
    # any reconcile the status write could have triggered has happened.
    hub.create(widget("sentinel"))
    eventually(lambda: plugin.generations("sentinel") == [1] and idle(manager), "sentinel reconciled", timeout=WAIT)
    assert manager.informers["Widget"].get(NAMESPACE, "w")["status"] == {"phase": "Ready"}
    assert plugin.generations("w") == [1], "a status-only update must not reconcile"

    current = hub.get(API_VERSION, "widgets", "w", NAMESPACE)
    current["spec"] = {"size": 2}
    hub.update(current)
    eventually(lambda: plugin.generations("w") == [1, 2], "the spec change is reconciled", timeout=WAIT)


def test_deletion_calls_the_forget_hook(hub: Any, run_widgets: Any) -> None:
    manager, plugin = run_widgets()
    hub.create(widget("doomed"))
    eventually(lambda: plugin.generations("doomed") == [1], "reconciled", timeout=WAIT)
    hub.delete(API_VERSION, "widgets", "doomed", NAMESPACE)
    eventually(lambda: plugin.forgotten == ["doomed"], "forget called", timeout=WAIT)
    assert manager.informers["Widget"].get(NAMESPACE, "doomed") is None


def test_a_deleted_object_is_forgotten_once_despite_pending_requeues(hub: Any, run_widgets: Any) -> None:
    manager, plugin = run_widgets()
    hub.create(widget("doomed"))
    eventually(lambda: plugin.generations("doomed") == [1], "reconciled", timeout=WAIT)
    hub.delete(API_VERSION, "widgets", "doomed", NAMESPACE)
    eventually(lambda: plugin.forgotten == ["doomed"], "forget called", timeout=WAIT)
    # A requeue left from before the deletion (requeue-after, a retry) comes due later.
    manager.controllers["Widget"].queue.add(ObjectRef("Widget", NAMESPACE, "doomed"))
    eventually(lambda: idle(manager), "the requeue processed", timeout=WAIT)
    assert plugin.forgotten == ["doomed"]
    hub.create(widget("doomed"))
    eventually(lambda: plugin.generations("doomed") == [1, 1], "the re-created widget reconciled", timeout=WAIT)
    hub.delete(API_VERSION, "widgets", "doomed", NAMESPACE)
    eventually(lambda: plugin.forgotten == ["doomed", "doomed"], "the re-created widget forgotten", timeout=WAIT)


def test_readyz_reports_a_worker_stuck_past_the_reconcile_deadline(hub: Any, managers: list[Manager]) -> None:
    release = threading.Event()

    def hang(_attempt: int, _obj: Mapping[str, Any]) -> None:
        release.wait(WAIT)
        return None

    plugin = WidgetPlugin({"stuck": hang})
    manager = make_manager(
        hub.api_client(), {"widgets": plugin}, health_probe_bind_address="127.0.0.1:0", reconcile_timeout=0.2
    )
    managers.append(manager)
    manager.start()
    assert manager.wait_synced(WAIT)
    hub.create(widget("stuck"))
    try:
        eventually(
            lambda: "busy with Widget" in http_get(manager.health_port, "/readyz")[1],
            "/readyz to report the stuck worker",
            timeout=WAIT,
        )
        status, body = http_get(manager.health_port, "/readyz")
        assert status == 503 and "stuck" in body and "deadline 0.2s" in body
    finally:
        release.set()
    eventually(lambda: http_get(manager.health_port, "/readyz") == (200, "ok"), "ready again", timeout=WAIT)


def test_a_deletion_timestamp_calls_forget_instead_of_reconcile(hub: Any, run_widgets: Any) -> None:
    manager, plugin = run_widgets()
    hub.create(widget("held", finalizers=["test.clusterpulse.io/hold"]))
    eventually(lambda: plugin.generations("held") == [1], "reconciled", timeout=WAIT)
    hub.delete(API_VERSION, "widgets", "held", NAMESPACE)
    eventually(lambda: plugin.forgotten == ["held"], "forget called while the finalizer holds it", timeout=WAIT)
    assert manager.informers["Widget"].get(NAMESPACE, "held")["metadata"]["deletionTimestamp"]
    assert plugin.generations("held") == [1]


def test_gone_watch_relists_without_losing_events(hub: Any, run_widgets: Any) -> None:
    hub.create(widget("kept"))
    hub.create(widget("changed"))
    hub.create(widget("removed"))
    manager, plugin = run_widgets()
    eventually(
        lambda: all(plugin.generations(n) == [1] for n in ("kept", "changed", "removed")),
        "initial reconciles",
        timeout=WAIT,
    )
    hub.stop()  # the watch breaks; the changes below happen while it is down
    hub.create(widget("new"))
    changed = hub.get(API_VERSION, "widgets", "changed", NAMESPACE)
    changed["spec"] = {"size": 5}
    hub.update(changed)
    hub.delete(API_VERSION, "widgets", "removed", NAMESPACE)
    hub.compact()  # the informer's resourceVersion is now too old: 410 Gone
    hub.clear_requests()
    hub.start()
    eventually(lambda: plugin.generations("new") == [1], "the object created during the outage", timeout=WAIT)
    eventually(lambda: plugin.generations("changed") == [1, 2], "the object changed during the outage", timeout=WAIT)
    eventually(lambda: plugin.forgotten == ["removed"], "the object deleted during the outage", timeout=WAIT)
    eventually(lambda: idle(manager), "queue idle", timeout=WAIT)
    assert plugin.generations("kept") == [1], "an unchanged object is not reconciled again"
    lists = [
        q
        for method, path, q in hub.requests
        if method == "GET" and path.endswith("/widgets") and q.get("watch") not in ("true", "1")
    ]
    assert lists, "the informer relisted after 410"
    informer = manager.informers["Widget"]
    assert sorted(name for _ns, name in informer.cache_keys()) == ["changed", "kept", "new"]


def test_a_failing_watch_is_retried_with_backoff(hub: Any, run_widgets: Any, caplog: pytest.LogCaptureFixture) -> None:
    _manager, plugin = run_widgets()
    hub.fail(r"/widgets$", status=500, times=1)
    hub.clear_requests()
    hub.restart()  # the open watch breaks; the next attempt fails with 500
    hub.create(widget("late"))
    eventually(lambda: plugin.generations("late") == [1], "reconciled despite watch failures", timeout=WAIT)
    failures = [r.getMessage() for r in caplog.records if "list/watch of Widget failed" in r.getMessage()]
    assert any("(HTTP 500)" in message and "retrying in" in message for message in failures), failures


def test_a_silent_watch_is_restarted_by_the_watchdog(hub: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="clusterpulse_core.runtime.informer")
    informer = Informer(KubeClient(hub.api_client()), WIDGET, NAMESPACE, silence_limit=0.3)
    informer.start()
    try:
        assert informer.wait_synced(WAIT)
        eventually(lambda: len(watches(hub)) >= 2, "the silent watch is restarted", timeout=WAIT)
        assert all(q["resourceVersion"] == informer.resource_version for q in watches(hub))
        assert any("silent for 0.3 s" in r.getMessage() for r in caplog.records)
    finally:
        informer.stop()
    assert informer.items() == []


def watches(hub: Any) -> list[dict[str, str]]:
    return [
        q
        for method, path, q in hub.requests
        if method == "GET" and path.endswith("/widgets") and q.get("watch") == "true"
    ]


def test_resync_reconciles_everything_again(hub: Any, run_widgets: Any) -> None:
    hub.create(widget("steady"))
    _manager, plugin = run_widgets(resync_period=0.3)
    eventually(lambda: len(plugin.generations("steady")) >= 3, "resync re-enqueues the object", timeout=WAIT)


def test_resync_adds_nothing_for_an_object_with_a_scheduled_reconcile(hub: Any, run_widgets: Any) -> None:
    hub.create(widget("scheduled"))
    hub.create(widget("idle"))
    manager, plugin = run_widgets(
        {"scheduled": lambda attempt, obj: ReconcileResult(requeue_after=600)}, resync_period=0.2
    )
    eventually(lambda: len(plugin.generations("idle")) >= 4, "resyncs reconcile the unscheduled object", timeout=WAIT)
    assert plugin.generations("scheduled") == [1]
    assert manager.controllers["Widget"].queue.scheduled(ObjectRef("Widget", NAMESPACE, "scheduled"))


def test_resync_spreads_what_it_adds(hub: Any, run_widgets: Any) -> None:
    for index in range(20):
        hub.create(widget(f"w{index}"))
    manager, plugin = run_widgets(resync_period=1000.0)
    eventually(lambda: len(plugin.reconciled) == 20 and idle(manager), "first reconciles", timeout=WAIT)
    controller = manager.controllers["Widget"]
    for obj in manager.informers["Widget"].items():
        controller.on_resync(obj)
    # Nothing is due at once: every object waits for its own offset within the spread window.
    assert len(controller.queue) == 0 and controller.queue.delayed == 20
    offsets = sorted(
        spread_offset(controller.ref_of(obj), controller.resync_spread) for obj in manager.informers["Widget"].items()
    )
    assert controller.resync_spread == 100.0
    assert offsets[0] >= 0 and offsets[-1] < 100.0 and offsets[-1] - offsets[0] > 50.0
    assert len(set(offsets)) == 20


def test_workers_per_kind_come_from_the_setting(hub: Any, run_widgets: Any) -> None:
    manager, _plugin = run_widgets(workers={"Widget": 5})
    assert manager.controllers["Widget"].workers == 5
    assert len(manager.controllers["Widget"]._threads) == 5
    assert kind_workers({}, [WIDGET]) == {"Widget": 2}
    with pytest.raises(ConfigError, match=r"clusterpulse.workers.Gadget: no enabled plugin declares"):
        kind_workers({"Gadget": 2}, [WIDGET])
    with pytest.raises(ConfigError, match=r"clusterpulse.workers.Widget: expected a value >= 1, got 0"):
        kind_workers({"Widget": 0}, [WIDGET])


def test_the_informer_decodes_each_page_once(hub: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterpulse_core.kube.client as client_module
    import clusterpulse_core.runtime.informer as informer_module

    for index in range(25):
        hub.create(widget(f"p{index}"))
    decoded: list[int] = []

    def counting_decode(data: bytes) -> Any:
        decoded.append(len(data))
        return client_module.decode(data)

    def no_second_parse(body: bytes) -> str:
        raise AssertionError("a page was parsed a second time for its continue token")

    monkeypatch.setattr(informer_module, "decode", counting_decode)
    monkeypatch.setattr(client_module, "_continue_token", no_second_parse)
    informer = Informer(KubeClient(hub.api_client()), WIDGET, NAMESPACE, page_size=10)
    items, _rv = informer._list()
    assert sorted(obj["metadata"]["name"] for obj in items) == sorted(f"p{i}" for i in range(25))
    assert len(decoded) == 3  # pages of 10, 10 and 5, each decoded once


# --------------------------------------------------------------------------- probes and metrics


def test_probes_and_metrics(hub: Any, managers: list[Manager]) -> None:
    backend = FlakyBackend()
    plugin = WidgetPlugin()
    manager = make_manager(
        hub.api_client(),
        {"widgets": plugin, "storage": BackendPlugin(backend)},
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
    )
    managers.append(manager)
    manager.start()
    assert manager.wait_synced(WAIT)
    assert manager.health_port != manager.metrics_port

    assert http_get(manager.health_port, "/healthz") == (200, "ok")
    status, body = http_get(manager.health_port, "/readyz")
    assert status == 503
    assert "flaky: warming up" in body
    backend.problem = None
    assert http_get(manager.health_port, "/readyz") == (200, "ok")
    assert http_get(manager.health_port, "/nothing")[0] == 404

    hub.create(widget("m"))
    eventually(lambda: plugin.generations("m") == [1], "reconciled", timeout=WAIT)
    status, text = http_get(manager.metrics_port, "/metrics")
    assert status == 200
    for name in (
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_active_workers",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "clusterpulse_store_errors_total",
    ):
        assert name in text, name
    assert 'controller_runtime_reconcile_total{controller="widget",result="success"} 1.0' in text

    port = manager.health_port
    manager.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_probe_servers_can_be_disabled(hub: Any, run_widgets: Any) -> None:
    manager, _plugin = run_widgets(metrics_bind_address="0", health_probe_bind_address="")
    assert manager.metrics_port is None
    assert manager.health_port is None


def test_bind_addresses() -> None:
    assert parse_bind_address(":8080") == ("", 8080)
    assert parse_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_bind_address("[::1]:9000") == ("::1", 9000)
    assert parse_bind_address("0") is None
    with pytest.raises(ValueError, match="bind address"):
        parse_bind_address("localhost")


# --------------------------------------------------------------------------- leader election


def test_only_the_leader_reconciles_and_a_successor_takes_over(hub: Any, managers: list[Manager]) -> None:
    first, second = WidgetPlugin(), WidgetPlugin()
    leader = make_manager(hub.api_client(), {"widgets": first}, identity="replica-a", leader_elect=True)
    managers.append(leader)
    leader.start()
    assert leader.elector is not None and leader.elector.wait_leader(WAIT)
    follower = make_manager(hub.api_client(), {"widgets": second}, identity="replica-b", leader_elect=True)
    managers.append(follower)
    follower.start()
    assert leader.wait_synced(WAIT) and follower.wait_synced(WAIT)

    hub.create(widget("shared"))
    eventually(lambda: first.generations("shared") == [1], "the leader reconciles", timeout=WAIT)
    eventually(
        lambda: follower.informers["Widget"].get(NAMESPACE, "shared") is not None,
        "the follower's informer caches the object too",
        timeout=WAIT,
    )
    assert not follower.is_leader
    assert second.reconciled == [], "a follower never reconciles"

    leader.stop()  # a clean stop releases the Lease
    eventually(lambda: follower.is_leader, "the follower takes over", timeout=WAIT)
    eventually(lambda: second.generations("shared") == [1], "the new leader reconciles", timeout=WAIT)
    lease = hub.get("coordination.k8s.io/v1", "leases", "cluster-controller.clusterpulse.io", NAMESPACE)
    assert lease["spec"]["holderIdentity"] == "replica-b"
    assert lease["spec"]["leaseTransitions"] == 1


def test_losing_the_lease_stops_the_manager_with_an_error_code(hub: Any, managers: list[Manager]) -> None:
    plugin = WidgetPlugin()
    manager = make_manager(hub.api_client(), {"widgets": plugin}, identity="replica-a", leader_elect=True)
    managers.append(manager)
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(manager.run()))
    runner.start()
    eventually(lambda: manager.is_leader, "leading", timeout=WAIT)
    hub.fail(r"/leases/", status=500)  # renewals fail until the renew deadline passes
    runner.join(WAIT)
    assert not runner.is_alive()
    assert codes == [1]
    assert manager.controllers["Widget"].queue.shutting_down


def test_run_tunes_the_garbage_collector_while_it_runs_and_restores_it(hub: Any) -> None:
    seen: list[tuple[int, int]] = []

    def record(attempt: int, obj: Mapping[str, Any]) -> None:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))

    plugin = WidgetPlugin({"probe": record})
    manager = make_manager(hub.api_client(), {"widgets": plugin})
    before = gc.get_threshold()
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(manager.run()))
    runner.start()
    try:
        hub.create(widget("probe"))
        eventually(lambda: bool(seen), "the reconcile ran under Manager.run", timeout=WAIT)
    finally:
        manager.request_stop()
        runner.join(WAIT)
    threshold, frozen = seen[0]
    assert threshold == GC_YOUNG_THRESHOLD != before[0]
    assert frozen > 0, "what start-up made is out of every collection"
    assert codes == [0]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


# --------------------------------------------------------------------------- graceful shutdown


def test_sigterm_finishes_the_in_flight_reconcile(hub: Any, tmp_path: Path) -> None:
    hub.create(widget("slow"))
    log_file = tmp_path / "child.log"
    with log_file.open("w") as log:
        child = subprocess.Popen(
            [sys.executable, __file__, hub.url, str(tmp_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[2],
        )
    try:
        eventually(
            lambda: (tmp_path / "slow.started").exists() or child.poll() is not None,
            "the child starts reconciling",
            timeout=60,
        )
        assert child.poll() is None, log_file.read_text()
        assert not (tmp_path / "slow.done").exists()
        child.send_signal(signal.SIGTERM)
        code = child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    output = log_file.read_text()
    assert code == 0, output
    assert (tmp_path / "slow.done").exists(), output
    assert (tmp_path / "stopped").read_text() == "slow.done", "plugins stop after the reconcile finished"
    assert "received SIGTERM" in output


def child_main(url: str, marker_dir: str) -> int:
    """The manager the SIGTERM test runs in a subprocess: its reconcile takes a second."""
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    configuration = kubernetes.client.Configuration()
    configuration.host = url
    configuration.ssl_ca_cert = str(loopback_ca().ca_file)  # the parent's (inherited through the environment)
    plugin = WidgetPlugin(marker_dir=marker_dir, sleep=1.0)
    manager = make_manager(kubernetes.client.ApiClient(configuration), {"widgets": plugin})
    return manager.run()


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1], sys.argv[2]) if len(sys.argv) == 3 else os.EX_USAGE)
