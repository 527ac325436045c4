"""Upstream environment-variable parsing rules (docs/compatibility.md#environment), shared by every setting."""

from __future__ import annotations

import math
import re

_INT = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_bool(value: str | None, default: bool) -> bool:
    """``true``, ``1`` or ``yes`` are true; any other non-empty value is false; unset/empty -> default."""
    if value is None or value == "":
        return default
    return value in ("true", "1", "yes")


def parse_int(value: str | None, default: int, minimum: int | None = None) -> int:
    """Strict base-10 integer (64-bit); unparseable -> default; then raised to ``minimum``."""
    result = default
    if value is not None and value != "" and _INT.match(value):
        parsed = int(value)
        if _INT64_MIN <= parsed <= _INT64_MAX:
            result = parsed
    if minimum is not None and result < minimum:
        result = minimum
    return result


def parse_float(value: str | None, default: float) -> float:
    """A float setting from the environment; unparseable or not finite (``NaN``, ``Inf``) -> default."""
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        return default
    return number if math.isfinite(number) else default


def parse_str(value: str | None, default: str) -> str:
    """A string setting: unset or empty -> default."""
    return default if value is None or value == "" else value
