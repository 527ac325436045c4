"""The one way tests wait for something to happen: :func:`eventually`.

A test never sleeps to let things settle; it polls a condition, bounded by a timeout it derives
from the settings under test (a few lease durations, reconcile intervals, ack timeouts…), so a
loaded machine slows the test down but does not fail it, and a broken code path still fails it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Default pause between two polls, in seconds.
POLL_INTERVAL = 0.05
#: Bound of a process's start-up (interpreter, imports, plugin discovery, first log line), seconds.
#: Start-up is the machine's, not a setting's: a loaded machine (or a first import compiling
#: bytecode) slows it by tens of seconds. Wait for the process's "started" observable with this
#: bound, then bound what the test measures by the settings under test.
STARTUP = 180.0


def eventually(condition: Callable[[], T], what: str, timeout: float, *, interval: float = POLL_INTERVAL) -> T:
    """Poll ``condition`` until it returns something truthy, and return that value.

    ``timeout`` (seconds) is required: derive it from the settings the test exercises. After it
    an ``AssertionError`` names ``what``, the bound and the last value seen. An exception raised
    by ``condition`` propagates at once (a condition that may fail transiently should catch what
    it expects).
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last value: {value!r})")
        time.sleep(min(interval, remaining))
