"""The bounded retry queue between ``store()`` and the sender thread."""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable

from clusterpulse_vmwriter.render import Batch


class RetryQueue:
    """Batches waiting to be sent, oldest first, at most ``cycles`` per stream.

    A stream is one kind of state of one target (``nodes:prod``), stored once per
    collection cycle; keeping ``cycles`` batches per stream lets an outage of that many
    cycles lose nothing however many clusters there are. Putting one more drops the
    stream's oldest batch (returned to the caller, who counts it). Thread-safe; the sender
    peeks at the head, sends it and then marks it done, so a batch is never lost to a
    failed send.
    """

    def __init__(self, cycles: int) -> None:
        self.cycles = cycles
        self._batches: OrderedDict[int, Batch] = OrderedDict()
        self._streams: dict[tuple[str, ...], deque[int]] = {}
        self._next_seq = 0
        self._changed = threading.Condition()

    def put(self, batch: Batch) -> list[Batch]:
        """Append ``batch``; returns the batches dropped to stay within the bound."""
        dropped: list[Batch] = []
        with self._changed:
            seq = self._next_seq
            self._next_seq += 1
            self._batches[seq] = batch
            stream = self._streams.setdefault(batch.stream, deque())
            stream.append(seq)
            while len(stream) > self.cycles:
                dropped.append(self._batches.pop(stream.popleft()))
            self._changed.notify_all()
        return dropped

    def peek(self) -> tuple[int, Batch] | None:
        """The oldest batch and its sequence number, without removing it."""
        with self._changed:
            return next(iter(self._batches.items()), None)

    def done(self, seq: int) -> bool:
        """Remove batch ``seq`` after it was sent (``False`` if it was dropped meanwhile)."""
        with self._changed:
            batch = self._batches.pop(seq, None)
            if batch is None:
                return False
            stream = self._streams[batch.stream]
            stream.remove(seq)
            if not stream:
                del self._streams[batch.stream]
            self._changed.notify_all()
            return True

    def drain(self) -> list[Batch]:
        """Remove and return everything still queued (at shutdown)."""
        with self._changed:
            batches = list(self._batches.values())
            self._batches.clear()
            self._streams.clear()
            self._changed.notify_all()
            return batches

    def wait_for_batch(self, timeout: float, stopping: Callable[[], bool]) -> bool:
        """Block until something is queued, ``stopping()`` is true or ``timeout``; whether something is."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self._batches) or stopping(), timeout)
            return bool(self._batches)

    def wait_empty(self, timeout: float) -> bool:
        """Block until the queue is empty (or ``timeout``); whether it is."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._batches, timeout)

    def wake(self) -> None:
        """Wake every waiter (used when stopping)."""
        with self._changed:
            self._changed.notify_all()

    def __len__(self) -> int:
        with self._changed:
            return len(self._batches)

    @property
    def samples(self) -> int:
        """Samples in every queued batch."""
        with self._changed:
            return sum(batch.samples for batch in self._batches.values())
