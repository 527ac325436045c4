"""A rate-limited, delaying, de-duplicating work queue (client-go's ``workqueue`` semantics).

* An item queued twice before a worker takes it is processed once; an item added while a
  worker processes it is queued again once that worker calls :meth:`WorkQueue.done`, so the
  same item never runs on two workers at the same time.
* :meth:`WorkQueue.add_after` holds an item back for a delay (the earliest pending time wins).
* :meth:`WorkQueue.add_rate_limited` waits the longer of the item's own exponential backoff
  (``base_delay * 2**failures``, capped at ``max_delay``) and the shared token bucket's delay;
  :meth:`WorkQueue.forget` resets the item's backoff after a success.
* :meth:`WorkQueue.shutdown` stops accepting items and releases waiting workers; in-flight
  items finish and :meth:`WorkQueue.wait_idle` waits for them.

Every time is read from an injectable ``clock`` so tests can drive the queue without sleeping.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge

T = TypeVar("T", bound=Hashable)
Clock = Callable[[], float]


class QueueMetrics:
    """The ``workqueue_*`` metrics, registered once per registry and labelled by queue name."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.depth = Gauge("workqueue_depth", "Current depth of the work queue", ["name"], registry=registry)
        self.adds = Counter("workqueue_adds_total", "Items added to the work queue", ["name"], registry=registry)
        self.retries = Counter("workqueue_retries_total", "Rate-limited re-adds (retries)", ["name"], registry=registry)


class TokenBucket:
    """The overall rate limit: ``qps`` tokens a second, at most ``burst`` saved up.

    :meth:`reserve` takes one token and returns how long to wait for it (0 when one was
    available); reservations queue up behind each other like Go's ``rate.Limiter.Reserve``.
    """

    def __init__(self, qps: float, burst: int, clock: Clock = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"token bucket needs qps > 0 and burst >= 1, got qps={qps} burst={burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token; the delay in seconds until it is really available."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps


class ItemBackoff:
    """Per-item exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``."""

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def next_delay(self, item: Hashable) -> float:
        """Count one more failure of ``item`` and return the delay before its retry."""
        with self._lock:
            failures = self._failures.get(item, 0)
            self._failures[item] = failures + 1
        if failures >= 64:  # 2**64 * any sane base is far beyond every cap; avoid float overflow
            return self.max_delay
        return min(self.base_delay * float(2**failures), self.max_delay)

    def failures(self, item: Hashable) -> int:
        """How many failures of ``item`` are counted."""
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        """Reset ``item``'s backoff."""
        with self._lock:
            self._failures.pop(item, None)


class WorkQueue(Generic[T]):
    """The work queue of one controller; see the module docstring for the semantics."""

    def __init__(
        self,
        name: str,
        *,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        qps: float = 10.0,
        burst: int = 100,
        clock: Clock = time.monotonic,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self.name = name
        self._clock = clock
        self.backoff = ItemBackoff(base_delay, max_delay)
        self.bucket = TokenBucket(qps, burst, clock)
        self._metrics = metrics
        self._cond = threading.Condition()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._waiting: dict[T, float] = {}
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._shutting_down = False
        self._drain = False
        if metrics is not None:
            # Scraped live: delayed items whose time has come count as soon as they are due, not
            # only once a free worker promotes them.
            metrics.depth.labels(name=name).set_function(self.due)

    # ------------------------------------------------------------------ adding

    def add(self, item: T) -> None:
        """Queue ``item`` now (no-op when it is already queued or the queue is shut down)."""
        with self._cond:
            self._add_locked(item)

    def add_after(self, item: T, delay: float) -> None:
        """Queue ``item`` after ``delay`` seconds (immediately when ``delay <= 0``)."""
        with self._cond:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(item)
                return
            ready_at = self._clock() + delay
            current = self._waiting.get(item)
            if current is not None and current <= ready_at:
                return
            self._waiting[item] = ready_at
            heapq.heappush(self._heap, (ready_at, next(self._seq), item))
            self._cond.notify_all()

    def add_rate_limited(self, item: T) -> float:
        """Queue ``item`` after its backoff (and the token bucket's delay); returns the delay used."""
        delay = max(self.backoff.next_delay(item), self.bucket.reserve())
        if self._metrics is not None:
            self._metrics.retries.labels(name=self.name).inc()
        self.add_after(item, delay)
        return delay

    def forget(self, item: T) -> None:
        """Reset ``item``'s backoff (after it was processed successfully)."""
        self.backoff.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many rate-limited retries of ``item`` are counted since the last :meth:`forget`."""
        return self.backoff.failures(item)

    def _add_locked(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if self._metrics is not None:
            self._metrics.adds.labels(name=self.name).inc()
        if item in self._processing:
            return  # queued again by done()
        self._queue.append(item)
        self._report_depth()
        self._cond.notify_all()

    # ------------------------------------------------------------------ taking

    def get(self, timeout: float | None = None) -> T | None:
        """The next item to process, or ``None`` on shutdown or after ``timeout`` seconds.

        The caller must call :meth:`done` with the item when it has finished with it.
        ``timeout=0`` never blocks (useful with a test clock).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote_due()
                if self._shutting_down and (not self._drain or not self._queue):
                    return None
                if self._queue:
                    item = self._queue.popleft()
                    self._processing.add(item)
                    self._dirty.discard(item)
                    self._report_depth()
                    return item
                wait = self._until_next_due()
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    wait = remaining if wait is None else min(wait, remaining)
                self._cond.wait(wait)

    def done(self, item: T) -> None:
        """Mark ``item`` processed; if it was added meanwhile, queue it again."""
        with self._cond:
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._report_depth()
            self._cond.notify_all()

    def _promote_due(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            ready_at, _seq, item = heapq.heappop(self._heap)
            if self._waiting.get(item) != ready_at:
                continue  # superseded by an earlier add_after
            del self._waiting[item]
            self._add_locked(item)

    def _until_next_due(self) -> float | None:
        while self._heap and self._waiting.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        if not self._heap:
            return None
        return max(self._heap[0][0] - self._clock(), 0.0)

    # ------------------------------------------------------------------ state

    def __len__(self) -> int:
        """Items ready to be taken (not counting delayed or in-flight ones)."""
        with self._cond:
            return len(self._queue)

    def scheduled(self, item: T) -> bool:
        """Whether ``item`` is queued, waiting for its delay, or being processed."""
        with self._cond:
            return item in self._dirty or item in self._processing or item in self._waiting

    def in_progress(self, item: T) -> bool:
        """Whether a worker is processing ``item`` right now."""
        with self._cond:
            return item in self._processing

    def due(self) -> int:
        """Items that could be processed now: queued, plus delayed ones whose time has come."""
        with self._cond:
            now = self._clock()
            return len(self._queue) + sum(1 for ready_at in self._waiting.values() if ready_at <= now)

    @property
    def delayed(self) -> int:
        """Items waiting for their delay."""
        with self._cond:
            return len(self._waiting)

    @property
    def in_flight(self) -> int:
        """Items taken by workers and not yet done."""
        with self._cond:
            return len(self._processing)

    @property
    def shutting_down(self) -> bool:
        """Whether :meth:`shutdown` was called."""
        with self._cond:
            return self._shutting_down

    def shutdown(self, drain: bool = False) -> None:
        """Stop accepting items and wake every waiting worker.

        With ``drain`` the items already queued are still handed out; without it workers get
        ``None`` at once (in-flight items always finish: see :meth:`wait_idle`).
        """
        with self._cond:
            self._shutting_down = True
            self._drain = drain
            self._waiting.clear()
            self._heap.clear()
            if not drain:
                self._queue.clear()
                self._dirty.clear()
            self._report_depth()
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no item is in flight (and, when draining, none is queued); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._processing or (self._drain and self._queue):
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def _report_depth(self) -> None:
        if self._metrics is not None:
            self._metrics.depth.labels(name=self.name).set(len(self._queue))
