"""The write fence: one check before every status patch and every store.

A replica may write only while it runs and, under leader election, while its hold on the
Lease is still fresh. The leader elector records when each successful renewal *started*; the
hold is valid for ``renew_deadline`` seconds after that (less than the lease duration, so a
successor cannot have taken over yet). A replica paused (SIGSTOP, a long GC, a frozen VM) and
resumed finds its hold expired on the monotonic clock and writes nothing, even before its
elector thread runs again. After :meth:`Fence.close` (shutdown, leadership lost) nothing is
written at all.

Both :meth:`clusterpulse_core.store.Store.put` and
:meth:`clusterpulse_core.context.ReconcileContext.patch_status` call :meth:`Fence.check`, and a
status patch gets the rest of the hold as its wall-clock deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter


class FencedError(Exception):
    """This replica may not write now; the message says why."""


class Fence:
    """Open by default (no leader election); see the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._closed = ""
        self._lease_until: float | None = None
        self._refused: Counter | None = None

    def register_metrics(self, registry: CollectorRegistry) -> None:
        """Count refused writes in ``clusterpulse_fenced_writes_total``."""
        self._refused = Counter(
            "clusterpulse_fenced_writes_total",
            "Writes refused because this replica may not write",
            ["what"],
            registry=registry,
        )

    def require_lease(self) -> None:
        """From now on, writes need a fresh Lease hold (none yet: closed until the first renewal)."""
        with self._lock:
            self._lease_until = float("-inf")

    def renewed(self, valid_until: float) -> None:
        """The Lease was (re)taken; the hold is valid until ``valid_until`` (monotonic seconds)."""
        with self._lock:
            if self._lease_until is not None:
                self._lease_until = max(self._lease_until, valid_until)

    def close(self, reason: str) -> None:
        """Refuse every write from now on (idempotent; the first reason is kept)."""
        with self._lock:
            if not self._closed:
                self._closed = reason

    @property
    def closed(self) -> str:
        """Why the fence was closed, or ``""``."""
        with self._lock:
            return self._closed

    def why_not(self) -> str:
        """``""`` when writing is allowed now, else the reason."""
        with self._lock:
            if self._closed:
                return self._closed
            if self._lease_until is not None and self._clock() >= self._lease_until:
                return "the leader Lease is not held (or its renewal is overdue)"
            return ""

    def remaining(self) -> float | None:
        """Seconds left of the Lease hold (None without leader election)."""
        with self._lock:
            if self._lease_until is None:
                return None
            return self._lease_until - self._clock()

    def check(self, what: str) -> None:
        """Raise :class:`FencedError` unless this replica may write now."""
        reason = self.why_not()
        if reason:
            if self._refused is not None:
                self._refused.labels(what=what).inc()
            raise FencedError(f"{what} refused: {reason}")
