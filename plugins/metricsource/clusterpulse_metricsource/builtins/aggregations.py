"""Built-in aggregation functions: count, sum, avg, min, max, percentile, distinct
(docs/compatibility.md#metricsource-language, M10, M11).

Each function receives the non-null field values of the matching resources (for ``count``,
which needs no field, one entry per matching resource) and the aggregation spec. Only ints
and floats are numeric; strings, bools, lists and maps are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from clusterpulse_core.hookspecs import Register


def register_builtin_aggregations(register: Register) -> None:
    """Register the seven built-in aggregation functions."""
    register("count", count, needs_field=False)
    register("sum", total)
    register("avg", average)
    register("min", minimum)
    register("max", maximum)
    register("percentile", percentile)
    register("distinct", distinct)


def numeric(values: Sequence[Any]) -> list[float]:
    """The int and float values (bools excluded) as floats, in order."""
    return [float(v) for v in values if type(v) is float or type(v) is int]


def count(values: Sequence[Any], spec: Any) -> float:
    """The number of matching resources."""
    return float(len(values))


def total(values: Sequence[Any], spec: Any) -> float:
    """The sum of the numeric values in order (0.0 when there are none)."""
    result = 0.0
    for value in numeric(values):
        result += value  # plain left-to-right addition, as upstream (no compensated summation)
    return result


def average(values: Sequence[Any], spec: Any) -> float | None:
    """The mean of the numeric values; ``None`` when there are none."""
    numbers = numeric(values)
    if not numbers:
        return None
    return total(numbers, spec) / len(numbers)


def minimum(values: Sequence[Any], spec: Any) -> float | None:
    """The smallest numeric value; ``None`` when there are none."""
    numbers = numeric(values)
    return min(numbers) if numbers else None


def maximum(values: Sequence[Any], spec: Any) -> float | None:
    """The largest numeric value; ``None`` when there are none."""
    numbers = numeric(values)
    return max(numbers) if numbers else None


def percentile(values: Sequence[Any], spec: Any) -> float | None:
    """Linear interpolation between closest ranks at ``spec.percentile`` (clamped to 0..100)."""
    numbers = sorted(numeric(values))
    if not numbers:
        return None
    p = min(100.0, max(0.0, float(getattr(spec, "percentile", 0) or 0)))
    idx = p / 100 * (len(numbers) - 1)
    lo, hi = math.floor(idx), math.ceil(idx)
    if lo == hi:
        return numbers[lo]
    frac = idx - lo
    return numbers[lo] * (1 - frac) + numbers[hi] * frac


def distinct(values: Sequence[Any], spec: Any) -> float:
    """The number of distinct non-null values; equal numbers count once (``1`` and ``1.0``, M11)."""
    seen: set[tuple[str, Any]] = set()
    for value in values:
        if value is None:
            continue
        seen.add(_distinct_key(value))
    return float(len(seen))


def _distinct_key(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)  # Python's 1 == 1.0 with equal hashes gives M1 equality
    if isinstance(value, str):
        return ("string", value)
    return ("other", repr(value))
