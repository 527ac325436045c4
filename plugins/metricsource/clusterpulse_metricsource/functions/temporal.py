"""Time built-ins: ``now``, ``age`` (docs/compatibility.md#metricsource-language).

``age`` accepts what Go's ``time.Parse(time.RFC3339, s)`` accepts: upper-case ``T`` and
``Z``, an optional fraction of a second (``.`` or ``,``), ``Z`` or ``±hh:mm``, every field in
range (no leap seconds, no 31 February).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from clusterpulse_metricsource.expr.values import to_string

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?"
    r"(?:Z|([+-])([0-9]{2}):([0-9]{2}))"
)
_NANOS_PER_SECOND = 1_000_000_000
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, including 0)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def parse_rfc3339_nanos(text: str) -> int | None:
    """Nanoseconds since the Unix epoch of an RFC 3339 timestamp, or None when invalid."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    if not 1 <= month <= 12:
        return None
    month_days = 29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month - 1]
    if not 1 <= day <= month_days or hour > 23 or minute > 59 or second > 59:
        return None
    offset = 0
    if match.group(8):
        offset_hours, offset_minutes = int(match.group(9)), int(match.group(10))
        if offset_hours > 23 or offset_minutes > 59:
            return None
        offset = (offset_hours * 3600 + offset_minutes * 60) * (-1 if match.group(8) == "-" else 1)
    fraction = (match.group(7) or "")[:9].ljust(9, "0")
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    return seconds * _NANOS_PER_SECOND + int(fraction)


def now() -> str:
    """``now()``: the current UTC time, RFC 3339 with whole seconds (``2024-01-15T10:30:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def age(value: Any) -> float | None:
    """``age(t)``: seconds from the RFC 3339 time ``toString(t)`` to now (negative for a
    future time); nil for ``""`` or anything unparsable."""
    instant = parse_rfc3339_nanos(to_string(value))
    if instant is None:
        return None
    elapsed = time.time_ns() - instant
    whole = abs(elapsed) // _NANOS_PER_SECOND
    nanos = abs(elapsed) % _NANOS_PER_SECOND
    sign = -1.0 if elapsed < 0 else 1.0
    return sign * (float(whole) + float(nanos) / 1e9)


def register_functions(register: Callable[..., None]) -> None:
    """Register the time built-ins."""
    register("now", now, min_args=0, max_args=0, finite_results=True)
    register("age", age, min_args=1, max_args=1, finite_results=True)
