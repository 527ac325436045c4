"""The agent's bounded FIFO of batches waiting for the ingester (docs/compatibility.md#collector-protocol)."""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_CAPACITY = 10


class BatchBuffer(Generic[T]):
    """Bounded FIFO: pushing onto a full buffer drops the oldest entry and counts it.

    A capacity of 0 or less means :data:`DEFAULT_CAPACITY`. Thread-safe.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity if capacity > 0 else DEFAULT_CAPACITY
        self._items: deque[T] = deque()
        self._lock = threading.Lock()
        #: Entries dropped because the buffer was full.
        self.dropped = 0

    def push(self, item: T) -> T | None:
        """Append ``item``; returns the entry dropped to make room, if any."""
        with self._lock:
            dropped = None
            if len(self._items) >= self.capacity:
                dropped = self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            return dropped

    def push_front(self, item: T) -> bool:
        """Put an entry that could not be delivered back at the head (order kept).

        Returns False (and counts a drop) when the buffer filled up meanwhile: it is the oldest.
        """
        with self._lock:
            if len(self._items) >= self.capacity:
                self.dropped += 1
                return False
            self._items.appendleft(item)
            return True

    def pop(self) -> T | None:
        """Remove and return the oldest entry, or ``None`` when empty."""
        with self._lock:
            return self._items.popleft() if self._items else None

    def peek(self) -> T | None:
        """The oldest entry without removing it."""
        with self._lock:
            return self._items[0] if self._items else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
