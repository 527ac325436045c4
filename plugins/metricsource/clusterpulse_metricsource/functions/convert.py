"""Conversion built-ins: ``toString``, ``toNumber``, ``formatBytes`` (docs/compatibility.md#metricsource-language)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from clusterpulse_metricsource.expr.values import finite_or_none, to_float, to_string

_BYTE_UNITS = ("B", "Ki", "Mi", "Gi", "Ti", "Pi")


def to_string_(value: Any) -> str:
    """``toString(x)``."""
    return to_string(value)


def to_number(value: Any) -> float | None:
    """``toNumber(x)``: ``toFloat``, so numeric strings are parsed (M2); non-finite is nil (M3)."""
    return finite_or_none(to_float(value))


def _two_decimals(number: float) -> str:
    """Go's ``%.2f``: correctly rounded, ``NaN``/``+Inf``/``-Inf`` for non-finite values."""
    if number != number:
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return f"{number:.2f}"


def format_bytes(value: Any) -> str:
    """``formatBytes(n)``: binary units up to Pi with two decimals and no space (``1.50Ki``)."""
    number = to_float(value)
    unit = 0
    while number >= 1024 and unit < len(_BYTE_UNITS) - 1:
        number /= 1024
        unit += 1
    return _two_decimals(number) + _BYTE_UNITS[unit]


def register_functions(register: Callable[..., None]) -> None:
    """Register the conversion built-ins."""
    register("toString", to_string_, min_args=1, max_args=1, finite_results=True)
    register("toNumber", to_number, min_args=1, max_args=1, finite_results=True)
    register("formatBytes", format_bytes, min_args=1, max_args=1, finite_results=True)
