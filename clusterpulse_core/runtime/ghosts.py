"""The ghost sweep: stored objects the hub no longer has are forgotten as a deletion would.

An object deleted while no controller runs leaves its state in storage forever (``clusters:all``,
a "healthy" status with a frozen ``last_check``, alerts still firing). So, once the informers
have synced after the controllers start (as leader, or as a shard member), and then every
``ghost_sweep_interval`` seconds, each kind's owning plugin says which objects storage still
holds (its reconciler's ``stored_refs``); every one the informer cache does not have is queued, and
the controller, finding it missing, calls its ``forget`` like for any deletion (with
sharding, the gate hands it to the replica that owns it). The core knows no kind: the plugins
decide what exists.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from clusterpulse_core.context import Runtime
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.runtime.controller import Controller

log = logging.getLogger(__name__)

#: Seconds between two checks whether the controllers run and their informers synced.
POLL = 1.0


def find_ghosts(runtime: Runtime, controller: Controller) -> list[ObjectRef]:
    """The objects of ``controller``'s kind that storage holds and the (synced) informer does not."""
    stored = controller.reconciler.stored_refs(runtime)
    if not stored:
        return []
    return [ref for ref in stored if controller.informer.get(ref.namespace, ref.name) is None]


class GhostSweeper:
    """A daemon thread queueing ghosts into the controllers that run here."""

    def __init__(self, runtime: Runtime, controllers: Mapping[str, Controller], interval: float) -> None:
        self.runtime = runtime
        self.controllers = controllers
        self.interval = interval
        self.sweeps = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start sweeping in the background."""
        self._thread = threading.Thread(target=self._run, name="ghost-sweep", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop (a sweep in progress finishes)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)

    def sweep(self) -> int:
        """One sweep of every running controller whose informer synced; how many ghosts were queued."""
        queued = 0
        for name, controller in self.controllers.items():
            if not controller.started or not controller.informer.has_synced:
                continue
            try:
                ghosts = find_ghosts(self.runtime, controller)
            except Exception as exc:  # storage unreadable now: the next sweep tries again
                log.warning("ghost sweep of %s failed: %s: %s", name, type(exc).__name__, exc)
                continue
            for ref in ghosts:
                log.warning(
                    "%s %s/%s is stored but no longer exists on the hub: forgetting it",
                    ref.kind,
                    ref.namespace,
                    ref.name,
                )
                controller.queue.add(ref)
            queued += len(ghosts)
        self.sweeps += 1
        return queued

    def _ready(self) -> bool:
        running = [c for c in self.controllers.values() if c.started]
        return bool(running) and all(c.informer.has_synced for c in running)

    def _run(self) -> None:
        while not self._stop.is_set() and not self._ready():
            self._stop.wait(POLL)
        while not self._stop.is_set():
            self.sweep()
            if self.interval <= 0 or self._stop.wait(self.interval):
                return
