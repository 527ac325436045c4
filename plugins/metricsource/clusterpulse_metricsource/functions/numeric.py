"""Numeric built-ins: ``round``, ``floor``, ``ceil``, ``abs``, ``min``, ``max``
(docs/compatibility.md#metricsource-language).

Arguments go through ``toFloat`` (numeric strings are parsed, M2); a NaN or infinite
result is nil (M3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from clusterpulse_metricsource.expr.values import finite_or_none, go_int64, to_float

_EXACT_INTEGER = 2.0**52  # every float at least this large is already an integer


def round_half_away_from_zero(value: float) -> float:
    """Go's ``math.Round``: the nearest integer, halves away from zero, sign kept (-0.4 -> -0.0)."""
    if not -_EXACT_INTEGER < value < _EXACT_INTEGER:
        return value  # already integral, or not finite
    rounded = round(value)  # halves to even; the difference below is exact
    difference = value - rounded
    if difference == 0.5 or difference == -0.5:
        return value + math.copysign(0.5, value)
    return math.copysign(float(rounded), value)


_POWERS_OF_TEN = {exponent: 10.0**exponent for exponent in range(-22, 23)}


def _power_of_ten(exponent: int) -> float:
    """``10**exponent`` as a float, infinite when too large and 0 when too small."""
    power = _POWERS_OF_TEN.get(exponent)
    if power is not None:
        return power
    try:
        return 10.0**exponent
    except OverflowError:
        return math.inf


def round_(value: Any, digits: Any = 0.0) -> float | None:
    """``round(x[, d])``: ``roundHalfAwayFromZero(x * 10^d) / 10^d`` with d truncated."""
    number = to_float(value)
    scale = _power_of_ten(go_int64(to_float(digits)))
    if scale == 0 or math.isinf(scale):
        return None  # x*0/0 or x*inf/inf: NaN upstream, nil under M3
    return finite_or_none(round_half_away_from_zero(number * scale) / scale)


def _keep_zero_sign(result: float, source: float) -> float:
    """Go's floor/ceil keep the sign of zero (``ceil(-0.5)`` is -0.0)."""
    return math.copysign(0.0, source) if result == 0 else result


def floor(value: Any) -> float | None:
    """``floor(x)``: the largest integer not above x, as a float."""
    number = to_float(value)
    if not math.isfinite(number):
        return None
    return _keep_zero_sign(float(math.floor(number)), number)


def ceil(value: Any) -> float | None:
    """``ceil(x)``: the smallest integer not below x, as a float."""
    number = to_float(value)
    if not math.isfinite(number):
        return None
    return _keep_zero_sign(float(math.ceil(number)), number)


def abs_(value: Any) -> float | None:
    """``abs(x)``: the absolute value, as a float."""
    return finite_or_none(math.fabs(to_float(value)))


def min_(left: Any, right: Any) -> float | None:
    """``min(a, b)``: Go's ``math.Min`` (NaN wins, -0.0 below 0.0), then M3."""
    a, b = to_float(left), to_float(right)
    if a < b:
        return finite_or_none(a)
    if b < a:
        return finite_or_none(b)
    if a != a or b != b:
        return None
    return finite_or_none(a if math.copysign(1.0, a) < 0 else b)


def max_(left: Any, right: Any) -> float | None:
    """``max(a, b)``: Go's ``math.Max`` (NaN wins, 0.0 above -0.0), then M3."""
    a, b = to_float(left), to_float(right)
    if a > b:
        return finite_or_none(a)
    if b > a:
        return finite_or_none(b)
    if a != a or b != b:
        return None
    return finite_or_none(a if math.copysign(1.0, a) > 0 else b)


def register_functions(register: Callable[..., None]) -> None:
    """Register the numeric built-ins."""
    register("round", round_, min_args=1, max_args=2, finite_results=True)
    register("floor", floor, min_args=1, max_args=1, finite_results=True)
    register("ceil", ceil, min_args=1, max_args=1, finite_results=True)
    register("abs", abs_, min_args=1, max_args=1, finite_results=True)
    register("min", min_, min_args=2, max_args=2, finite_results=True)
    register("max", max_, min_args=2, max_args=2, finite_results=True)
