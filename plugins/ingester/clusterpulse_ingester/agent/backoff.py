"""Reconnect backoff of the agent (docs/compatibility.md#c7): 1 s doubling to 5 min, with jitter, reset on register."""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """Delays before reconnecting: nominal ``min(base * 2^(n-1), cap)`` for the n-th since the last reset.

    Each delay is the nominal one times a random factor in ``[1 - jitter, 1 + jitter]``, so a
    fleet of agents that lost the hub together does not reconnect in lockstep.
    """

    def __init__(
        self,
        base: float = 1.0,
        cap: float = 300.0,
        jitter: float = 0.5,
        attempts: int = 0,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.base = base
        self.cap = cap
        self.jitter = jitter
        self.attempts = attempts
        self._rand = rand

    def nominal(self) -> float:
        """The delay the next call would take before jitter."""
        return min(self.base * 2.0 ** min(self.attempts, 62), self.cap)

    def next(self) -> float:
        """The next delay, seconds (counts an attempt)."""
        delay = self.nominal()
        self.attempts += 1
        return delay * (1.0 - self.jitter + 2.0 * self.jitter * self._rand())

    def reset(self) -> None:
        """A registration succeeded: start again from ``base``."""
        self.attempts = 0
