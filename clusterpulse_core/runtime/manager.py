"""The manager: plugins, informers, controllers, leader election and probes of one process.

Start-up order: plugins (``clusterpulse_start``), one informer and one controller per
declared kind, the probe and metrics servers, then either the controllers' workers directly or
leader election (the informers run on every replica; only the leader runs workers). With
``sharding`` every replica also joins the shard ring (:mod:`clusterpulse_core.runtime.sharding`)
and runs the sharded kinds' workers at once, each reconciling only the objects it owns, and the
workers of the kinds split by a sharded kind (``split_by``), each doing its own share; the
other kinds stay with the leader.

Shutdown (:meth:`Manager.stop`, or SIGTERM/SIGINT under :meth:`Manager.run`): the queues stop
handing out work, in-flight reconciles get ``shutdown_grace`` seconds to finish; then the write
fence closes (nothing is stored or patched from here on), every remote call still running is
cut off (``Runtime.calls``: this runtime's own watchdog), the Lease is released, informers and
servers stop, and finally the plugins stop. The process exits within the grace plus a few
seconds, whatever the managed clusters do.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from clusterpulse_core.context import Runtime
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.runtime.bootstrap import kind_workers, start_plugins, stop_plugins
from clusterpulse_core.runtime.controller import Controller, ControllerMetrics
from clusterpulse_core.runtime.ghosts import GhostSweeper
from clusterpulse_core.runtime.informer import Informer
from clusterpulse_core.runtime.leader import LeaderElector, default_identity
from clusterpulse_core.runtime.probes import (
    Endpoint,
    ProbeServer,
    health_reply,
    metrics_reply,
    parse_bind_address,
    ready_reply,
)
from clusterpulse_core.runtime.sharding import ShardMember, ShardMetrics, sharded_controllers, split_controllers
from clusterpulse_core.runtime.workqueue import QueueMetrics, WorkQueue

log = logging.getLogger(__name__)

#: How often idle managed-cluster clients are reaped (docs/compatibility.md#manager).
REAP_INTERVAL = 300.0
#: Exit code of :meth:`Manager.run` after losing the leader Lease.
EXIT_LEADERSHIP_LOST = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: How long stopping waits for workers after their remote calls were cut off, seconds.
CANCEL_WAIT = 2.0
#: The share of the resync period over which a resync's reconciles are spread.
RESYNC_SPREAD = 0.1
#: Allocations between two collections of the cyclic garbage collector's youngest generation
#: while :meth:`Manager.run` runs (CPython's default is 700), see :func:`collector_tuned`.
GC_YOUNG_THRESHOLD = 100_000


@contextmanager
def collector_tuned() -> Iterator[None]:
    """Tune the cyclic garbage collector for a long-running controller, for the block.

    A reconcile allocates tens of thousands of short-lived containers (decoded pages, pieces,
    commands). At CPython's default threshold the collector runs every 700 of them, so the
    objects of reconciles still in flight are scanned again and again, pushed to the oldest
    generation, and set off full collections of the whole heap: 14 % of a 300-cluster fleet
    controller's CPU in ``benchmarks/bench_fleet.py`` (``gc.callbacks``, measured in the
    controller). A reconcile makes no reference cycles (``test_a_reconcile_leaves_no_reference_cycles``):
    its objects are freed by reference counting, and a young collection only rescans the data of
    the reconciles in flight. So the collections are made rare: with :data:`GC_YOUNG_THRESHOLD`
    they took 0.2 % of a 1,000-cluster controller's CPU, against 5 % at 10,000 (and the same
    peak RSS). ``gc.freeze()`` also moves what start-up made (modules, plugins, settings) out of
    every later collection. Both are undone on exit.
    """
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


class Manager:
    """Runs every enabled kind's controller for one :class:`Runtime`.

    ``identity`` names this replica in the leader Lease (default ``<hostname>_<uuid>``).
    """

    def __init__(self, runtime: Runtime, identity: str | None = None) -> None:
        self.runtime = runtime
        self.core = runtime.config.core
        self.identity = identity or default_identity()
        self.informers: dict[str, Informer] = {}
        self.controllers: dict[str, Controller] = {}
        self.elector: LeaderElector | None = None
        self.shard: ShardMember | None = None
        self.servers: dict[str, ProbeServer] = {}
        self._queue_metrics = QueueMetrics(runtime.metrics)
        self._controller_metrics = ControllerMetrics(runtime.metrics)
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._stop_requested = threading.Event()
        self._stopped = threading.Event()
        self._started = False
        self._plugins_started = False
        self._exit_code = 0
        self._reaper: threading.Thread | None = None
        #: Queues stored objects the hub no longer has (see :mod:`clusterpulse_core.runtime.ghosts`).
        self.ghosts: GhostSweeper | None = None
        runtime.leader_check = lambda: self.is_leader

    # ------------------------------------------------------------------ state

    @property
    def running(self) -> bool:
        """Between a successful :meth:`start` and :meth:`stop`."""
        return self._running.is_set()

    @property
    def is_leader(self) -> bool:
        """Whether this replica runs the controllers (always, without leader election)."""
        if self.elector is None:
            return self.running
        return self.elector.is_leader

    @property
    def metrics_port(self) -> int | None:
        """The bound ``/metrics`` port, or None when disabled."""
        server = self.servers.get("metrics")
        return server.port if server else None

    @property
    def health_port(self) -> int | None:
        """The bound ``/healthz`` and ``/readyz`` port, or None when disabled."""
        server = self.servers.get("health")
        return server.port if server else None

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait until every informer has listed its kind; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers.values():
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not informer.wait_synced(remaining):
                return False
        return True

    def resync(self) -> int:
        """Queue every cached object of every kind now (the periodic resync, on demand).

        Returns how many objects were queued. Used by ``clusterpulse demo`` to run cycles.
        """
        queued = 0
        for name, controller in self.controllers.items():
            for obj in self.informers[name].items():
                controller.queue.add(controller.ref_of(obj))
                queued += 1
        return queued

    def not_ready(self) -> list[str]:
        """Why the replica is not ready: unsynced informers, unready storage backends."""
        problems = [] if self.running else ["manager is not running"]
        problems += [
            f"informer {name} has not synced" for name, informer in self.informers.items() if not informer.has_synced
        ]
        problems += [f"storage {problem}" for problem in self.runtime.store.ready()]
        for controller in self.controllers.values():
            problems += controller.stuck()
        return problems

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start everything and return (see the module docstring for the order)."""
        with self._lock:
            if self._started:
                raise RuntimeError("manager already started")
            self._started = True
        try:
            start_plugins(self.runtime)
            self._plugins_started = True
            self._build_controllers()
            for informer in self.informers.values():
                informer.start()
            self._start_servers()
            self._running.set()
            self._identify()
            self.runtime.on_resync_request(self._resync_requested)
            if self.core.sharding or self.core.leader_elect:
                self.runtime.fence.require_lease()  # fed by the leader Lease or the member Lease
            if self.core.sharding:
                self._start_sharding()  # sharded kinds start at once, fenced by the member Lease
            if self.core.leader_elect or self.core.sharding:
                self.elector = LeaderElector(
                    self.runtime.hub,
                    self.runtime.namespace,
                    self.identity,
                    lease_duration=self.core.lease_duration,
                    renew_deadline=self.core.renew_deadline,
                    retry_period=self.core.retry_period,
                    on_started_leading=self._start_controllers,
                    on_stopped_leading=self._leadership_lost,
                    fence=self.runtime.fence,
                )
                self.elector.start()
            else:
                self._start_controllers()
            self._reaper = threading.Thread(target=self._reap, name="pool-reaper", daemon=True)
            self._reaper.start()
            self.ghosts = GhostSweeper(self.runtime, self.controllers, self.core.ghost_sweep_interval)
            self.ghosts.start()
        except BaseException:
            self.stop()
            raise
        log.info("manager %s started: kinds %s", self.identity, ", ".join(self.controllers) or "none")

    def run(self) -> int:
        """Start, block until SIGTERM/SIGINT (or :meth:`request_stop`), stop; returns the exit code.

        The process's garbage collector is tuned for the run (:func:`collector_tuned`)."""
        previous = self._install_signal_handlers()
        try:
            with collector_tuned():
                try:
                    self.start()
                except Exception as exc:
                    log.error("manager failed to start: %s", exc)
                    return 1
                while not self._stop_requested.wait(1.0):
                    pass
                self.stop()
                return self._exit_code
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def request_stop(self, exit_code: int = 0) -> None:
        """Ask :meth:`run` to stop (safe from any thread and from signal handlers)."""
        if not self._stop_requested.is_set():
            self._exit_code = exit_code
        self._stop_requested.set()

    def stop(self) -> None:
        """Stop gracefully; idempotent. In-flight reconciles get ``shutdown_grace`` seconds."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        self._stop_requested.set()
        self._running.clear()
        log.info("manager %s stopping", self.identity)
        if self.ghosts is not None:
            self.ghosts.stop()
        self._stop_controllers(self.core.shutdown_grace)
        self.runtime.fence.close("the manager is stopping")
        grace = self.core.shutdown_grace
        # This manager's reconciles only: another manager in the process keeps its calls.
        cut = self.runtime.calls.cancel_all(f"cut off at shutdown after the {grace:g}s grace (shutdown_grace)")
        if cut:
            log.warning("cut off %d remote calls still running after the %gs shutdown grace", cut, grace)
        for controller in self.controllers.values():
            controller.join(CANCEL_WAIT)
        if self.shard is not None:
            self.shard.stop(release=True)
        if self.elector is not None:
            self.elector.stop(release=True)
        for informer in self.informers.values():
            informer.stop()
        if self._reaper is not None:
            self._reaper.join(5.0)
        for server in self.servers.values():
            server.stop()
        if self._plugins_started:
            stop_plugins(self.runtime)
        log.info("manager %s stopped", self.identity)

    # ------------------------------------------------------------------ parts

    def _build_controllers(self) -> None:
        workers = kind_workers(self.core.workers, [kind for _owner, kind in self.runtime.plugins.kinds.values()])
        for name, (owner, kind) in self.runtime.plugins.kinds.items():
            namespace = self.runtime.namespace if kind.namespaced else None
            informer = Informer.from_settings(self.runtime.hub, kind, namespace, self.core)
            queue: WorkQueue[ObjectRef] = WorkQueue(
                kind.kind.lower(),
                base_delay=self.core.queue_base_delay,
                max_delay=self.core.queue_max_delay,
                qps=self.core.queue_qps,
                burst=self.core.queue_burst,
                metrics=self._queue_metrics,
            )
            self.informers[name] = informer
            self.controllers[name] = Controller(
                self.runtime,
                owner,
                kind,
                informer,
                queue,
                self._controller_metrics,
                workers=workers[kind.kind],
                resync_spread=self.core.resync_period * RESYNC_SPREAD,
            )

    def _start_sharding(self) -> None:
        """Join the shard ring and start the sharded kinds' workers (their gate picks the objects)."""
        sharded = sharded_controllers(self.controllers)
        split = split_controllers(self.controllers)
        self.shard = ShardMember(
            self.runtime.hub,
            self.runtime.namespace,
            self.identity,
            sharded,
            lease_duration=self.core.lease_duration,
            renew_deadline=self.core.renew_deadline,
            retry_period=self.core.retry_period,
            handover_delay=self.core.shard_handover_delay,
            metrics=ShardMetrics(self.runtime.metrics),
            on_lost=self._leadership_lost,
            fence=self.runtime.fence,
            split=split,
            dead_after=self.core.shard_dead_after or None,
        )
        for controller in sharded.values():
            controller.gate = self.shard.gate
        for controller in split.values():  # everywhere, but only once the member knows its ring
            controller.gate = self.shard.split_gate
        self.runtime.shard = self.shard
        self.shard.start()
        for controller in (*sharded.values(), *split.values()):
            controller.start()

    def _start_controllers(self) -> None:
        if self._stopped.is_set():
            return
        for controller in self.controllers.values():
            controller.start()

    def _stop_controllers(self, grace: float) -> None:
        for controller in self.controllers.values():
            controller.queue.shutdown()
        deadline = time.monotonic() + grace
        for controller in self.controllers.values():
            controller.shutdown(max(deadline - time.monotonic(), 0.0))

    def _resync_requested(self, reason: str, ref: ObjectRef | None = None) -> None:
        if not self.running:
            return
        if ref is not None:
            for controller in self.controllers.values():
                if controller.kind.kind == ref.kind:
                    controller.queue.add(ref)
                    log.info("%s: queued %s", reason, ref)
            return
        queued = self.resync()
        log.warning("%s: queued all %d objects again", reason, queued)

    def _identify(self) -> None:
        """Name this replica in the User-Agent of its hub calls (audit logs, the emulator's write log)."""
        try:
            self.runtime.hub.api_client.user_agent = f"clusterpulse/{self.identity}"
        except AttributeError:
            pass
        if self.runtime.events is not None:
            self.runtime.events.instance = self.identity

    def _leadership_lost(self) -> None:
        # The elector closed the write fence already; stop handing out work, then stop.
        for controller in self.controllers.values():
            controller.queue.shutdown()
        self.request_stop(EXIT_LEADERSHIP_LOST)

    def _start_servers(self) -> None:
        wanted: dict[str, tuple[str, dict[str, Endpoint]]] = {
            "metrics": (self.core.metrics_bind_address, {"/metrics": metrics_reply(self.runtime.metrics)}),
            "health": (
                self.core.health_probe_bind_address,
                {
                    "/healthz": health_reply(lambda: self.running),
                    "/readyz": ready_reply(self.not_ready),
                },
            ),
        }
        by_address: dict[tuple[str, int], ProbeServer] = {}
        for name, (text, routes) in wanted.items():
            address = parse_bind_address(text)
            if address is None:
                continue
            shared = by_address.get(address) if address[1] != 0 else None
            if shared is not None:  # one port for both, as a single-port deployment may ask
                shared.routes.update(routes)
                self.servers[name] = shared
                continue
            server = ProbeServer(
                name, address, routes, self.core.probe_request_timeout, self.core.probe_max_connections
            )
            server.start()
            by_address[address] = server
            self.servers[name] = server

    def _reap(self) -> None:
        while not self._stop_requested.wait(REAP_INTERVAL):
            try:
                reaped = self.runtime.pool.reap_idle()
                if reaped:
                    log.info("closed idle cluster clients: %s", ", ".join(reaped))
            except Exception:
                log.exception("reaping idle cluster clients failed")

    def _install_signal_handlers(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("received %s: stopping (a second one exits at once)", signal.Signals(signum).name)
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            self.request_stop(0)

        previous: dict[int, Any] = {}
        for sig in STOP_SIGNALS:
            previous[sig] = signal.getsignal(sig)
            signal.signal(sig, on_signal)
        return previous
