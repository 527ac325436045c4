"""The VictoriaMetrics storage backend: render on ``store()``, deliver on a background thread."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from clusterpulse_core.pieces import Piece
from clusterpulse_vmwriter.client import ImportClient
from clusterpulse_vmwriter.metrics import WriterMetrics
from clusterpulse_vmwriter.queue import RetryQueue
from clusterpulse_vmwriter.render import render_batch
from clusterpulse_vmwriter.sender import Backoff, Sender
from clusterpulse_vmwriter.settings import VMSettings

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class VMWriterBackend:
    """History in VictoriaMetrics, off the reconcile's critical path.

    ``store()`` turns the pieces into Prometheus text lines stamped with their collection
    time and queues them; it never waits for the network and never raises because
    VictoriaMetrics is down. A sender thread posts one request per stored piece set (split
    at ``batch_size`` lines) and keeps up to ``queue_cycles`` cycles per series group while
    VictoriaMetrics is unreachable; older ones are dropped and counted.
    """

    name = "vmwriter"

    def __init__(
        self, settings: VMSettings, metrics: WriterMetrics | None = None, clock_ms: Callable[[], int] = _now_ms
    ) -> None:
        self.settings = settings
        self.metrics = metrics or WriterMetrics()
        self.queue = RetryQueue(settings.queue_cycles)
        self._clock_ms = clock_ms
        self._extra = tuple(settings.extra_labels.items())
        self._client = ImportClient(settings)
        self._sender = Sender(
            self.queue, self._client, self.metrics, Backoff(settings.retry_backoff, settings.retry_backoff_max)
        )
        self._closed = threading.Event()

    def store(self, pieces: Sequence[Piece]) -> None:
        """Queue the time series of ``pieces`` (pieces without any are ignored); never blocks on HTTP."""
        if self._closed.is_set():
            log.debug("vmwriter is closed; %d pieces not written to history", len(pieces))
            return
        try:
            batch = render_batch(pieces, self._clock_ms(), self.settings.batch_size, self._extra)
        except Exception:
            # History is best effort: a piece the writer cannot render must not fail the reconcile.
            log.exception("could not turn pieces into history samples; skipped")
            return
        if batch is None:
            return
        dropped = self.queue.put(batch)
        if dropped:
            lost = sum(old.samples for old in dropped)
            self.metrics.dropped.inc(lost)
            log.warning(
                "VictoriaMetrics retry queue full for %s: dropped the oldest %d samples", ",".join(batch.stream), lost
            )
        self.metrics.queued.set(len(self.queue))
        self._sender.ensure_started()

    def ready(self) -> str | None:
        """Always ``None``: history is best effort and never holds the manager back."""
        return None

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until everything queued was delivered; whether it was."""
        return self.queue.wait_empty(timeout)

    def close(self) -> None:
        """Flush for at most ``flush_timeout``, stop the sender, count what could not be sent."""
        if self._closed.is_set():
            return
        self._closed.set()
        if not self.flush(self.settings.flush_timeout):
            log.warning("VictoriaMetrics did not take every queued batch within %.1fs", self.settings.flush_timeout)
        if not self._sender.stop(self.settings.timeout + 1.0):
            log.warning("vmwriter sender did not stop in time")
        leftover = self.queue.drain()
        if leftover:
            lost = sum(batch.samples for batch in leftover)
            self.metrics.dropped.inc(lost)
            log.warning("vmwriter closed with %d batches (%d samples) unsent", len(leftover), lost)
        self.metrics.queued.set(0)
        self._client.close()
