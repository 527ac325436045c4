"""The one circuit breaker (docs/compatibility.md#c8 with docs/compatibility.md#c8)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

T = TypeVar("T")


class BreakerState(StrEnum):
    """Circuit breaker states."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class CircuitOpenError(Exception):
    """The breaker is open: the call was not made."""

    MESSAGE = "circuit breaker is open"

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


class CircuitBreaker:
    """Opens after ``threshold`` consecutive failures; half-opens ``recovery_timeout`` s later.

    A success while closed resets the failure count (C8); a success while half-open
    closes the breaker; a failure while half-open re-opens it and restarts the timer.
    """

    def __init__(
        self, threshold: int = 5, recovery_timeout: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold = threshold
        self.recovery_timeout = recovery_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self.state = BreakerState.CLOSED
        self.failure_count = 0
        self._last_failure = 0.0

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` through the breaker; raise :class:`CircuitOpenError` when open."""
        with self._lock:
            if self.state is BreakerState.OPEN:
                if self._clock() - self._last_failure > self.recovery_timeout:
                    self.state = BreakerState.HALF_OPEN
                else:
                    raise CircuitOpenError()
        try:
            result = fn()
        except Exception:
            with self._lock:
                self.failure_count += 1
                self._last_failure = self._clock()
                if self.failure_count >= self.threshold:
                    self.state = BreakerState.OPEN
            raise
        with self._lock:
            self.state = BreakerState.CLOSED
            self.failure_count = 0
        return result
