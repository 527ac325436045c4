"""The background thread that delivers queued batches, retrying with backoff while VictoriaMetrics is down."""

from __future__ import annotations

import logging
import threading

from clusterpulse_vmwriter.client import DeliveryError, ImportClient
from clusterpulse_vmwriter.metrics import WriterMetrics
from clusterpulse_vmwriter.queue import RetryQueue
from clusterpulse_vmwriter.render import Batch

log = logging.getLogger(__name__)


class Backoff:
    """Retry delays: ``initial``, doubling up to ``maximum``; reset after a success."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self.current = 0.0

    def next(self) -> float:
        """The delay before the next attempt."""
        self.current = min(self.maximum, self.current * 2 if self.current else self.initial)
        return self.current

    def reset(self) -> None:
        """Start again from ``initial``."""
        self.current = 0.0


class Sender:
    """Sends the queue's head batch, chunk by chunk, until the queue is empty or it is stopped.

    A retryable failure keeps the batch at the head and waits (backoff) before trying again,
    so batches arrive in order with their original timestamps once VictoriaMetrics is back.
    A body VictoriaMetrics refuses outright (HTTP 400, 413...) is dropped and counted.
    """

    #: How often an idle sender re-checks for a stop request it may have missed.
    IDLE_POLL = 1.0

    def __init__(self, queue: RetryQueue, client: ImportClient, metrics: WriterMetrics, backoff: Backoff) -> None:
        self.queue = queue
        self.client = client
        self.metrics = metrics
        self.backoff = backoff
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._failing = False
        #: (sequence number, chunks already sent) of the head batch being delivered.
        self._progress = (-1, 0)

    def ensure_started(self) -> None:
        """Start the thread on first use (idempotent; never after :meth:`stop`)."""
        with self._start_lock:
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._run, name="vmwriter-sender", daemon=True)
                self._thread.start()

    def stop(self, timeout: float) -> bool:
        """Ask the thread to stop and wait up to ``timeout``; whether it has stopped."""
        self._stopping.set()
        self.queue.wake()
        with self._start_lock:
            thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self) -> None:
        while not self._stopping.is_set():
            if not self.queue.wait_for_batch(self.IDLE_POLL, self._stopping.is_set):
                continue
            head = self.queue.peek()
            if head is None:
                continue
            try:
                self._deliver(*head)
            except Exception:
                # A bug here must not kill the thread for good: log it and carry on after a pause.
                log.exception("vmwriter sender failed unexpectedly")
                self._stopping.wait(self.backoff.next())

    def _deliver(self, seq: int, batch: Batch) -> None:
        sent = self._progress[1] if self._progress[0] == seq else 0
        try:
            while sent < len(batch.chunks):
                self.client.post(batch.chunks[sent].body)
                self.metrics.written.inc(batch.chunks[sent].samples)
                sent += 1
                self._progress = (seq, sent)
        except DeliveryError as exc:
            if exc.retryable:
                self._retry_later(exc)
                return
            lost = sum(chunk.samples for chunk in batch.chunks[sent:])
            log.warning("VictoriaMetrics refused a batch (%s): dropped %d samples", exc, lost)
            self.metrics.dropped.inc(lost)
        self.queue.done(seq)
        self.metrics.queued.set(len(self.queue))
        if self._failing:
            self._failing = False
            log.info("VictoriaMetrics is reachable again; %d batches still queued", len(self.queue))
        self.backoff.reset()

    def _retry_later(self, exc: DeliveryError) -> None:
        delay = self.backoff.next()
        if not self._failing:
            self._failing = True
            log.warning(
                "VictoriaMetrics write failed (%s); queueing history (%d batches, %d samples), retrying with backoff",
                exc,
                len(self.queue),
                self.queue.samples,
            )
        else:
            log.debug(
                "VictoriaMetrics write failed again (%s); retry in %.2fs, %d batches queued",
                exc,
                delay,
                len(self.queue),
            )
        self._stopping.wait(delay)
