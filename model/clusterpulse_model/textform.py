"""Go-compatible text forms of values and Go-compatible number parsing (docs/compatibility.md#metricsource-wire,
#metricsource-language).

The stored values and the filter semantics were defined by a Go implementation, so turning a
value into text (``fstr``) and text into a number (``parse_go_float``, ``parse_go_int``) follow
Go's ``strconv`` and ``fmt`` rules rather than Python's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_DECIMAL_FLOAT = re.compile(r"[+-]?(?:(?:\d(?:_?\d)*)(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?\Z")
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?:_?[0-9a-fA-F])*(?:\.(?:[0-9a-fA-F](?:_?[0-9a-fA-F])*)?)?[pP][+-]?\d(?:_?\d)*\Z")
_SPECIAL_FLOAT = re.compile(r"(?i)(?:[+-]?(?:inf|infinity)|nan)\Z")
_DECIMAL_INT = re.compile(r"[+-]?[0-9]+\Z")


class GoParseError(ValueError):
    """A string Go's ``strconv`` rejects; ``value`` is what Go returns alongside the error."""

    def __init__(self, message: str, value: Any) -> None:
        super().__init__(message)
        self.value = value


def parse_go_float(text: str) -> float:
    """``strconv.ParseFloat(text, 64)``: decimal, hex (``0x1p-2``), ``inf``/``nan``, ``_`` separators.

    No surrounding whitespace is allowed. An invalid string raises :class:`GoParseError` with
    value ``0.0``; an overflow raises it with value ``±inf``; an underflow is ``0.0`` without error.
    """
    if _SPECIAL_FLOAT.match(text):
        return float(text)
    if _DECIMAL_FLOAT.match(text):
        value = float(text)
    elif _HEX_FLOAT.match(text):
        value = _parse_hex_float(text.replace("_", ""))
    else:
        raise GoParseError(f"invalid float syntax: {text!r}", 0.0)
    if math.isinf(value):
        raise GoParseError(f"float out of range: {text!r}", value)
    return value


def _parse_hex_float(text: str) -> float:
    try:
        return float.fromhex(text)
    except OverflowError:
        return -math.inf if text.startswith("-") else math.inf


def parse_go_int(text: str) -> int:
    """``strconv.ParseInt(text, 10, 64)``: optional sign, ASCII digits only.

    Invalid text raises :class:`GoParseError` with value 0; out-of-range text raises it with
    the saturated int64 value.
    """
    if not _DECIMAL_INT.match(text):
        raise GoParseError(f"invalid integer syntax: {text!r}", 0)
    value = int(text)
    if value > INT64_MAX:
        raise GoParseError(f"integer out of range: {text!r}", INT64_MAX)
    if value < INT64_MIN:
        raise GoParseError(f"integer out of range: {text!r}", INT64_MIN)
    return value


def plain_float(value: float) -> str:
    """Go ``strconv.FormatFloat(v, 'f', -1, 64)``: the shortest round-trip digits, never an exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign, digits, exponent = _shortest_digits(value)
    point = len(digits) + exponent  # position of the decimal point within digits
    if point <= 0:
        text = "0." + "0" * (-point) + digits
    elif point >= len(digits):
        text = digits + "0" * (point - len(digits))
    else:
        text = digits[:point] + "." + digits[point:]
    return sign + text


def go_float_v(value: float) -> str:
    """Go ``fmt`` ``%v`` of a float64 (``strconv`` ``'g'`` shortest: exponent when < -4 or >= 6)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign, digits, exponent = _shortest_digits(value)
    decimal_exponent = len(digits) + exponent - 1
    if decimal_exponent < -4 or decimal_exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        esign = "-" if decimal_exponent < 0 else "+"
        return f"{sign}{mantissa}e{esign}{abs(decimal_exponent):02d}"
    return sign + plain_float(abs(value))


def _shortest_digits(value: float) -> tuple[str, str, int]:
    """(sign, significant digits, exponent) with value == sign digits * 10**exponent (shortest)."""
    sign = "-" if math.copysign(1.0, value) < 0 and value != 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = int(exp_text or 0) - len(fraction)
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return "", "0", 0
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    return sign, stripped, exponent


def format_float(value: float) -> str:
    """A float as the extractor prints it: integral values in int64 range as integers, else plain."""
    if value == value and not math.isinf(value) and value == int(value) and INT64_MIN <= value < 2**63:
        return str(int(value))
    return plain_float(value)


def scalar_text(value: Any, float_text: Callable[[float], str] = format_float) -> str | None:
    """The text of a string, bool or number as Go prints it; ``None`` for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value)
    return None


def fstr(value: Any) -> str:
    """The extractor's text form of a JSON value (docs/compatibility.md#metricsource-wire)."""
    text = scalar_text(value)
    return go_v(value) if text is None else text


def go_v(value: Any) -> str:
    """Go ``fmt`` ``%v`` of a decoded JSON value (lists ``[a b]``, maps ``map[k:v]`` sorted, nil ``<nil>``)."""
    if value is None:
        return "<nil>"
    text = scalar_text(value, go_float_v)
    if text is not None:
        return text
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_v(item) for item in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_v(value[key])}" for key in sorted(value)) + "]"
    return str(value)


def filter_text(value: Any) -> str:
    """``fstr2`` of docs/compatibility.md#metricsource-language: strings, numbers and bools as text; anything else
    is ``""``."""
    return scalar_text(value) or ""
