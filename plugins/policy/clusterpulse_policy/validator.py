"""The leader-only background work: the start-up ``policy:eval:*`` clean-up and the periodic validator.

Both run only on the replica that leads (with sharding: the one holding the leader Lease), so one
writer restates policies. The validator's first run is one interval after this replica starts
leading; it rewrites each stored policy's Redis ``status`` for the current time and publishes
``expired`` for the expired ones (the CR status changes on time through the reconcile itself).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from clusterpulse_model.pieces import PolicyEvalCacheReset, PolicyValidation

from clusterpulse_core.context import Runtime

log = logging.getLogger(__name__)

#: Seconds between two leadership checks while this replica does not lead.
LEADER_POLL = 1.0


class Validator:
    """Runs the clean-up once per leadership and the validation every ``interval`` seconds."""

    def __init__(self, runtime: Runtime, interval: float, clock: Callable[[], datetime]) -> None:
        self.runtime = runtime
        self.interval = interval
        self.clock = clock
        self.runs = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def clean(self) -> None:
        """Drop every cached policy evaluation of the APIs."""
        self.runtime.store.put(PolicyEvalCacheReset())

    def validate(self) -> None:
        """Restate every stored policy now."""
        self.runtime.store.put(PolicyValidation(self.clock()))
        self.runs += 1

    def start(self) -> None:
        """Start the background thread."""
        self._thread = threading.Thread(target=self._run, name="policy-validator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (waits for a run in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)

    def _run(self) -> None:
        next_run: float | None = None
        while not self._stop.is_set():
            if not self.runtime.is_leader():
                next_run = None
                self._stop.wait(LEADER_POLL)
                continue
            if next_run is None:
                self._guarded(self.clean, "start-up clean-up of policy:eval:*")
                next_run = time.monotonic() + self.interval
            remaining = next_run - time.monotonic()
            if remaining > 0:
                self._stop.wait(min(remaining, LEADER_POLL))
                continue
            self._guarded(self.validate, "policy validation")
            next_run += self.interval

    def _guarded(self, work: Callable[[], None], what: str) -> None:
        try:
            work()
        except Exception as exc:  # a failed run is retried at the next one; the thread must live on
            log.error("%s failed: %s", what, exc)
