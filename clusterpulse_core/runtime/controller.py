"""The controller of one resource kind: event filter, work queue and reconcile workers.

Events from the kind's informer become :class:`ObjectRef` items in the work queue (add and
delete events always; updates only when ``metadata.generation`` changed or a
``deletionTimestamp`` appeared, so status writes never trigger a reconcile; resyncs only for an
object with no reconcile queued or scheduled, spread over a window).
Each worker takes a reference, reads the object from the informer cache and calls the owning
plugin:

* object missing, or being deleted -> the kind's reconciler's ``forget`` (which may ask to be called again);
* otherwise -> its ``reconcile`` with the CRD schema's defaults applied (docs/compatibility.md#r5),
  whose :class:`ReconcileResult` says when to come back.

An exception is retried with the item's exponential backoff; a :class:`TerminalError` is
logged and not retried; a success resets the backoff.

Every reconcile runs under a wall-clock deadline (``reconcile_timeout``, see
:mod:`clusterpulse_core.deadline`): remote calls past it fail, so the reconcile fails like any
other error. A worker still busy well after its deadline is reported by :meth:`Controller.stuck`
(``/readyz`` lists it).
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from clusterpulse_core import deadline
from clusterpulse_core.context import ObjectLogger, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind, TerminalError
from clusterpulse_core.logs import TracebackOnce
from clusterpulse_core.runtime.informer import Informer, Obj
from clusterpulse_core.runtime.sharding import Admission
from clusterpulse_core.runtime.workqueue import WorkQueue

log = logging.getLogger(__name__)

#: How often an idle worker re-checks for shutdown (it is also woken by shutdown itself).
WORKER_POLL = 1.0
#: How many forgotten (deleted) objects are remembered so they are forgotten only once.
FORGOTTEN_KEPT = 10_000


class ControllerMetrics:
    """The ``controller_runtime_*`` metrics, registered once per registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.reconciles = Counter(
            "controller_runtime_reconcile_total",
            "Reconciles per controller and result",
            ["controller", "result"],
            registry=registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconcile errors per controller",
            ["controller"],
            registry=registry,
        )
        self.duration = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Time per reconcile",
            ["controller"],
            registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers", "Workers currently reconciling", ["controller"], registry=registry
        )


def spread_offset(ref: ObjectRef, window: float) -> float:
    """A stable offset in ``[0, window)`` for ``ref``: objects spread evenly over the window."""
    if window <= 0:
        return 0.0
    digest = zlib.crc32(f"{ref.kind}/{ref.namespace}/{ref.name}".encode())
    return window * digest / 2**32


def generation_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The update filter: spec changed (generation) or deletion started (docs/compatibility.md#manager)."""
    old_meta = old.get("metadata") or {}
    new_meta = new.get("metadata") or {}
    if old_meta.get("generation") != new_meta.get("generation"):
        return True
    return bool(new_meta.get("deletionTimestamp")) and not old_meta.get("deletionTimestamp")


class Controller:
    """Queue and workers for one kind owned by plugin ``owner``.

    The controller registers itself as a handler of ``informer`` at construction, so its
    queue fills as soon as the informer runs; workers only start with :meth:`start` (on the
    leader).
    """

    def __init__(
        self,
        runtime: Runtime,
        owner: str,
        kind: ResourceKind,
        informer: Informer,
        queue: WorkQueue[ObjectRef],
        metrics: ControllerMetrics,
        workers: int | None = None,
        resync_spread: float = 0.0,
    ) -> None:
        self.runtime = runtime
        self.owner = owner
        self.kind = kind
        #: What reconciles the kind: the object its declaration carries (or the owner's hooks).
        self.reconciler = runtime.plugins.reconciler(kind.kind)
        self.informer = informer
        self.queue = queue
        self.metrics = metrics
        self.workers = max(1, workers if workers is not None else kind.workers)
        self.resync_spread = resync_spread
        #: With sharding, says whether this replica may reconcile an object now (None: always).
        #: The gate also says how long to wait before asking again about an object it holds back.
        self.gate: Callable[[ObjectRef], tuple[Admission, float]] | None = None
        self._threads: list[threading.Thread] = []
        self._busy: dict[str, tuple[ObjectRef, float]] = {}
        # Objects already forgotten: a pending requeue of a deleted object must not forget it again.
        self._forgotten: dict[ObjectRef, None] = {}
        self._busy_lock = threading.Lock()
        self._tracebacks = TracebackOnce()
        informer.add_handler(self)

    @property
    def name(self) -> str:
        """The controller name used in metrics (the lower-cased kind)."""
        return self.kind.kind.lower()

    # ------------------------------------------------------------------ event handler

    def ref_of(self, obj: Mapping[str, Any]) -> ObjectRef:
        """The queue item of a raw object."""
        meta = obj.get("metadata") or {}
        return ObjectRef(self.kind.kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def on_add(self, obj: Obj) -> None:
        """Queue every new object."""
        ref = self.ref_of(obj)
        with self._busy_lock:
            self._forgotten.pop(ref, None)
        self.queue.add(ref)

    def on_update(self, old: Obj, new: Obj) -> None:
        """Queue an update only when the spec changed or deletion started."""
        if generation_changed(old, new):
            self.queue.add(self.ref_of(new))

    def on_delete(self, obj: Obj) -> None:
        """Queue a deleted object (processing finds it missing and calls forget)."""
        self.queue.add(self.ref_of(obj))

    def on_resync(self, obj: Obj) -> None:
        """Queue an object at a resync unless a reconcile of it is already queued or scheduled.

        What it does queue is spread over ``resync_spread`` seconds (a stable offset per
        object), so a resync of a big fleet is not one burst on top of the scheduled requeues.
        """
        ref = self.ref_of(obj)
        if self.queue.scheduled(ref):
            return
        self.queue.add_after(ref, spread_offset(ref, self.resync_spread))

    # ------------------------------------------------------------------ workers

    def start(self) -> None:
        """Start the worker threads."""
        if self._threads:
            return
        for index in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"{self.name}-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("controller %s started with %d workers", self.name, self.workers)

    @property
    def started(self) -> bool:
        """Whether the workers were started."""
        return bool(self._threads)

    def shutdown(self, grace: float) -> bool:
        """Take no new work and wait up to ``grace`` seconds for in-flight reconciles.

        Returns False when some reconcile was still running when the grace ran out.
        """
        self.queue.shutdown()
        deadline = time.monotonic() + grace
        finished = self.queue.wait_idle(grace)
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        if not finished:
            log.warning("controller %s: reconciles still running when the shutdown grace ran out", self.name)
        return finished

    @property
    def reconcile_timeout(self) -> float:
        """The wall-clock deadline of one reconcile of this kind, seconds."""
        return float(self.runtime.config.core.reconcile_timeout)

    def stuck(self, slack: float = 5.0) -> list[str]:
        """Workers busy with one object for longer than the reconcile deadline plus ``slack``."""
        limit = self.reconcile_timeout + slack
        now = time.monotonic()
        with self._busy_lock:
            busy = list(self._busy.items())
        return [
            f"controller {self.name}: {thread} busy with {ref} for {now - since:.0f}s (deadline "
            f"{self.reconcile_timeout:g}s)"
            for thread, (ref, since) in busy
            if now - since > limit
        ]

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the worker threads to end; False if some still run."""
        end = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(end - time.monotonic(), 0.0))
        return not any(thread.is_alive() for thread in self._threads)

    def _work(self) -> None:
        while True:
            ref = self.queue.get(WORKER_POLL)
            if ref is None:
                if self.queue.shutting_down:
                    return
                continue
            thread = threading.current_thread().name
            with self._busy_lock:
                self._busy[thread] = (ref, time.monotonic())
            try:
                with deadline.within(self.reconcile_timeout), deadline.owned_by(self.runtime.calls):
                    self.process(ref)
            except Exception:
                log.exception("controller %s: unexpected failure processing %s", self.name, ref)
            finally:
                with self._busy_lock:
                    self._busy.pop(thread, None)
                self.queue.done(ref)

    def process(self, ref: ObjectRef) -> None:
        """Reconcile (or forget) one object and schedule what comes next."""
        if self.gate is not None:
            admission, wait = self.gate(ref)
            if admission is Admission.WAIT:
                self.queue.add_after(ref, wait)
                return
            if admission is Admission.DROP:
                self.queue.forget(ref)  # another replica owns it
                return
        ctx = self.runtime.context(self.kind, ref)
        plugins = self.runtime.plugins
        obj = self.informer.get(ref.namespace, ref.name)
        started = time.perf_counter()
        self.metrics.active_workers.labels(controller=self.name).inc()
        try:
            if obj is None and self._was_forgotten(ref):
                ctx.log.debug("already forgotten")
                result: Any = None
            elif obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
                ctx.log.info("forgetting (%s)", "gone" if obj is None else "being deleted")
                forgotten = plugins.reconcile_call(
                    self.kind, ref, "forget", ctx, lambda: self.reconciler.forget(ref, ctx)
                )
                if obj is None:
                    self._remember_forgotten(ref)
                # A plugin still waiting to clean up (its finalizer is on the object) asks to come back.
                result = forgotten if isinstance(forgotten, ReconcileResult) else None
            else:
                current = self.kind.with_defaults(obj)
                result = plugins.reconcile_call(
                    self.kind, ref, "reconcile", ctx, lambda: self.reconciler.reconcile(current, ctx)
                )
        except TerminalError as exc:
            ctx.log.error("reconcile failed permanently, not retrying: %s", exc)
            self.queue.forget(ref)
            self._count("error")
            return
        except Exception as exc:
            delay = self.queue.add_rate_limited(ref)
            ctx.log.error(
                "reconcile failed (%s: %s); retry %d in %.3f s",
                type(exc).__name__,
                exc,
                self.queue.num_requeues(ref),
                delay,
                exc_info=self._tracebacks.exc_info(exc),
            )
            self._count("error")
            return
        finally:
            self.metrics.active_workers.labels(controller=self.name).dec()
            self.metrics.duration.labels(controller=self.name).observe(time.perf_counter() - started)
        self._schedule(ref, result if isinstance(result, ReconcileResult) else ReconcileResult(), ctx.log)

    def _was_forgotten(self, ref: ObjectRef) -> bool:
        with self._busy_lock:
            return ref in self._forgotten

    def _remember_forgotten(self, ref: ObjectRef) -> None:
        with self._busy_lock:
            self._forgotten[ref] = None
            while len(self._forgotten) > FORGOTTEN_KEPT:
                del self._forgotten[next(iter(self._forgotten))]

    def _schedule(self, ref: ObjectRef, result: ReconcileResult, ctx_log: ObjectLogger) -> None:
        after = result.requeue_after
        if result.error:
            ctx_log.warning("reconcile reported an error: %s", result.error)
            self._count("error")
            if after is None or after <= 0:
                self.queue.add_rate_limited(ref)
                return
            self.queue.forget(ref)
            self.queue.add_after(ref, after)
            return
        if after is None:
            self.queue.forget(ref)
            self._count("success")
        elif after <= 0:
            self.queue.add_rate_limited(ref)
            self._count("requeue")
        else:
            self.queue.forget(ref)
            self.queue.add_after(ref, after)
            self._count("requeue_after")

    def _count(self, result: str) -> None:
        self.metrics.reconciles.labels(controller=self.name, result=result).inc()
        if result == "error":
            self.metrics.errors.labels(controller=self.name).inc()
