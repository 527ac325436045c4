"""Failures of plugin functions during a collection: counted, named, never silent.

A registered expression function or aggregation that raises leaves its value ``null`` (the
resource and the other results are kept), and the failure is tallied here per place and
function. The collector turns the tally into per-cluster errors, which the reconciler logs
(with the MetricSource, cluster and function), counts in ``/metrics``
(``clusterpulse_metricsource_function_errors_total``) and reports in the status
(``errorsLastRun``, ``message``).
"""

from __future__ import annotations

import threading

import attrs
from clusterpulse_metricsource.errors import ExpressionError


class FunctionError(ExpressionError):
    """A registered expression function raised; carries the function's name and the cause."""

    def __init__(self, function: str, cause: BaseException, expression: str = "") -> None:
        self.function = function
        self.cause = cause
        super().__init__(f"function {function} raised {type(cause).__name__}: {cause}", None, expression)


@attrs.frozen
class FunctionFailure:
    """All failures of one function at one place (a computed field or an aggregation) in one collection."""

    where: str
    function: str
    count: int
    message: str

    def describe(self) -> str:
        """``computed field "x": function sha1 raised ValueError: bad (3 resources)``."""
        times = f" ({self.count} resources)" if self.count > 1 else ""
        return f"{self.where}: {self.message}{times}"


class FailureTally:
    """Thread-safe tally of function failures (namespaces of one cluster are listed in parallel)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], list[int | str]] = {}

    def add(self, where: str, function: str, cause: BaseException) -> None:
        """Count one failure of ``function`` at ``where``; the first message is kept."""
        key = (where, function)
        with self._lock:
            entry = self._seen.get(key)
            if entry is None:
                self._seen[key] = [1, f"function {function} raised {type(cause).__name__}: {cause}"]
            else:
                entry[0] = int(entry[0]) + 1

    def failures(self) -> list[FunctionFailure]:
        """Every tallied failure, in the order first seen."""
        with self._lock:
            return [
                FunctionFailure(where, function, int(count), str(message))
                for (where, function), (count, message) in self._seen.items()
            ]
