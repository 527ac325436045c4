"""The MetricSource status written after a reconcile, and when to come back
(docs/compatibility.md#metricsource-reconcile)."""

from __future__ import annotations

from datetime import datetime

import attrs

from clusterpulse_core.conditions import Condition
from clusterpulse_core.serde import wire

#: Requeue after a compile or store failure (upstream's error status path).
ERROR_REQUEUE_SECONDS = 30
#: Floor of the shortened requeue after collection errors.
MIN_ERROR_REQUEUE_SECONDS = 30


@wire(case="camel")
@attrs.frozen
class CollectedStatus:
    """The status after a collection run (``phase: Active``)."""

    phase: str
    last_collection_time: datetime
    last_collection_duration: str
    resources_collected: int
    clusters_collected: int
    errors_last_run: int
    message: str
    conditions: tuple[Condition, ...]


@wire(case="camel")
@attrs.frozen
class FailedStatus:
    """The status of a MetricSource that could not be compiled or stored (``phase: Error``)."""

    phase: str
    message: str
    errors_last_run: int
    conditions: tuple[Condition, ...]


def collected_status(
    now: datetime, elapsed_seconds: float, resources: int, clusters: int, errors: int, generation: int, detail: str = ""
) -> CollectedStatus:
    """``Active`` status with the run's totals and a ``Ready=True`` condition.

    ``detail`` (the first plugin function failure, if any) is appended to the message.
    """
    message = "Collection successful" if errors == 0 else f"Collected with {errors} errors"
    if errors and detail:
        message += f"; first: {detail}"
    ready = Condition(
        "Ready",
        "True",
        "CollectionSuccessful",
        f"Collected {resources} resources from {clusters} clusters",
        now,
        generation,
    )
    return CollectedStatus(
        "Active", now, duration_text(elapsed_seconds), resources, clusters, errors, message, (ready,)
    )


def failed_status(now: datetime, message: str, previous_errors: int, generation: int) -> FailedStatus:
    """``Error`` status; ``errorsLastRun`` counts up from the previous value."""
    ready = Condition("Ready", "False", "Error", message, now, generation)
    return FailedStatus("Error", message, previous_errors + 1, (ready,))


def requeue_seconds(interval_seconds: int, errors: int) -> float:
    """``interval`` after a clean run; half of it (at least 30 s) after errors."""
    if errors <= 0:
        return interval_seconds
    delay = max(interval_seconds / 2, MIN_ERROR_REQUEUE_SECONDS)
    return int(delay) if delay == int(delay) else delay


def duration_text(seconds: float) -> str:
    """Go's ``Duration.Round(time.Millisecond).String()``: ``0s``, ``850ms``, ``1.5s``, ``1m3.5s``, ``1h0m0.001s``."""
    nanos = round(seconds * 1e9)
    sign = "-" if nanos < 0 else ""
    millis = (abs(nanos) + 500_000) // 1_000_000  # halves round away from zero, like Go
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{sign}{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    whole, fraction = divmod(rest, 1000)
    text = f"{whole}.{fraction:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text
