"""Wall-clock deadlines on remote calls, and the one watchdog that enforces them.

A socket timeout bounds each read, not the call: a server dripping one byte a second never
trips it. So every HTTP call made through a pool manager prepared by :func:`watch_pool` runs
inside :func:`guard`, which registers the call's connection with a watchdog thread; when the
call's time is up the watchdog shuts the socket down, whatever phase (connect, headers, body)
the call is in, and the call fails with :class:`DeadlineExceeded`.

The time a call gets is the smaller of its own timeout and what is left of the surrounding
deadline: :func:`within` sets one for a block of code (the controller sets one per reconcile,
a plugin may narrow it). Deadlines are context variables, so they follow ``contextvars``-aware
thread hand-offs (:func:`clusterpulse_core.collect.run_collectors` copies the context into its
threads).

Watchdogs are owned, not global: each runtime has its own (``Runtime.calls``), and the
controller runs every reconcile under :func:`owned_by` that watchdog, so the calls a reconcile
makes (and the collector threads it starts, which copy the context) are registered with it.
:meth:`Watchdog.cancel_all` fires the calls of one watchdog only: a manager stopping after its
shutdown grace cuts its own hung reconciles, not the calls of another manager in the same
process. Calls made outside any owner (CLI commands, plugin threads) still get their deadline
from a private watchdog that nothing can cancel wholesale.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from urllib3 import connection as _urllib3_connection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("clusterpulse_deadline", default=None)
_owner: contextvars.ContextVar[Watchdog | None] = contextvars.ContextVar("clusterpulse_watchdog", default=None)


class DeadlineExceeded(TimeoutError):
    """A call or a block of work ran past its wall-clock deadline."""


def current() -> float | None:
    """The absolute ``time.monotonic()`` deadline in force, or None."""
    return _deadline.get()


def remaining(default: float | None = None) -> float | None:
    """Seconds left before the deadline in force (may be <= 0); ``default`` when there is none."""
    deadline = _deadline.get()
    if deadline is None:
        return default
    return deadline - time.monotonic()


def budget(timeout: float) -> float:
    """The time one call may take: ``timeout`` capped by the deadline in force.

    Raises :class:`DeadlineExceeded` when the deadline has already passed.
    """
    left = remaining()
    if left is None:
        return timeout
    if left <= 0:
        raise DeadlineExceeded("deadline exceeded before the call started")
    return min(timeout, left)


@contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Run the block under a deadline ``seconds`` from now (an outer, earlier deadline still wins)."""
    if seconds is None:
        yield
        return
    new = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(new if outer is None else min(outer, new))
    try:
        yield
    finally:
        _deadline.reset(token)


# --------------------------------------------------------------------------- the watchdog


class _Watch:
    """One guarded call: its deadline and the connection it is using."""

    __slots__ = ("connection", "deadline", "fired", "reason", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.connection: _urllib3_connection.HTTPConnection | None = None
        self.fired = False
        self.reason = ""

    def fire(self, reason: str) -> None:
        self.fired = True
        self.reason = reason
        connection = self.connection
        sock = getattr(connection, "sock", None) if connection is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Watchdog:
    """Fires calls whose deadline passed (one daemon thread, started on first use).

    One per owner (a runtime): :meth:`cancel_all` fires only the calls registered with it.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Watch]] = []
        self._active: set[_Watch] = set()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, watch: _Watch) -> None:
        """Watch a call until :meth:`discard`.

        The thread is woken only when this deadline is the earliest: waking it for every call
        (a reconcile makes about twenty) cost a thread switch each, a sixth of a reconcile's CPU.
        Finished calls leave the heap lazily; it is rebuilt when they outnumber the active ones.
        """
        with self._cond:
            self._active.add(watch)
            head = self._heap[0][0] if self._heap else None
            if len(self._heap) > 2 * len(self._active) + 64:
                self._heap = [entry for entry in self._heap if entry[2] in self._active]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (watch.deadline, next(self._seq), watch))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="deadline-watchdog", daemon=True)
                self._thread.start()
            if head is None or watch.deadline < head:
                self._cond.notify()

    def discard(self, watch: _Watch) -> None:
        """The call is over."""
        with self._cond:
            self._active.discard(watch)

    def cancel_all(self, reason: str = "cancelled") -> int:
        """Fire every active call now; returns how many were fired.

        ``reason`` is the whole message the calls fail with (after the call's name), so it says
        why they were cut and after how long (the shutdown grace), not the call's own timeout.
        """
        with self._cond:
            watches = list(self._active)
        for watch in watches:
            watch.fire(reason)
        return len(watches)

    @property
    def active(self) -> int:
        """How many calls are being watched."""
        with self._cond:
            return len(self._active)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2] not in self._active:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, _, watch = heapq.heappop(self._heap)
            watch.fire(f"deadline exceeded after {watch.timeout:.3g}s")


#: Enforces the deadlines of calls made outside any owner; never cancelled wholesale.
_UNOWNED = Watchdog()
_local = threading.local()


@contextmanager
def owned_by(watchdog: Watchdog) -> Iterator[None]:
    """Register the calls guarded in this block (and in threads that copy its context) with ``watchdog``."""
    token = _owner.set(watchdog)
    try:
        yield
    finally:
        _owner.reset(token)


def owner() -> Watchdog | None:
    """The watchdog the calls of this context are registered with, or None (unowned)."""
    return _owner.get()


@contextmanager
def guard(timeout: float, what: str = "call") -> Iterator[_Watch]:
    """Run one HTTP call (connect, headers and body) within ``timeout`` seconds of wall clock.

    Only calls made through a pool manager prepared by :func:`watch_pool` are cut off. Raises
    :class:`DeadlineExceeded` (chained to the transport error) when the watchdog fired.
    """
    watch = _Watch(timeout)
    watchdog = _owner.get() or _UNOWNED
    previous = getattr(_local, "watch", None)
    _local.watch = watch
    watchdog.add(watch)
    try:
        yield watch
    except Exception as exc:
        if watch.fired:
            raise DeadlineExceeded(f"{what}: {watch.reason}") from exc
        if time.monotonic() >= watch.deadline:
            # The transport's own timeout (the same limit) beat the watchdog to it: still the deadline.
            raise DeadlineExceeded(f"{what}: deadline exceeded after {timeout:.3g}s ({exc})") from exc
        raise
    finally:
        watchdog.discard(watch)
        _local.watch = previous
    if watch.fired:
        raise DeadlineExceeded(f"{what}: {watch.reason}")


def _arm(connection: _urllib3_connection.HTTPConnection) -> None:
    watch = getattr(_local, "watch", None)
    if watch is not None:
        watch.connection = connection
        if watch.fired:
            watch.fire(watch.reason)


# Named like urllib3's own classes: their names appear in connection error messages.
class HTTPConnection(_urllib3_connection.HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _arm(self)
        super().request(*args, **kwargs)

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        _arm(self)
        return super().getresponse(*args, **kwargs)


class HTTPSConnection(_urllib3_connection.HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _arm(self)
        super().request(*args, **kwargs)

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        _arm(self)
        return super().getresponse(*args, **kwargs)


class _WatchedPool(HTTPConnectionPool):
    ConnectionCls = HTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = HTTPSConnection


def watch_pool(pool_manager: Any) -> Any:
    """Make a urllib3 ``PoolManager`` (or ``ProxyManager``) build connections :func:`guard` can cut."""
    pool_manager.pool_classes_by_scheme = {"http": _WatchedPool, "https": _WatchedHTTPSPool}
    pool_manager.clear()
    return pool_manager
