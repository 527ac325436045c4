"""Built-in field types: string, integer, float, boolean, quantity, timestamp, arrayLength
(docs/compatibility.md#metricsource-wire, M8, Q2)."""

from __future__ import annotations

import functools
import math
import re
from datetime import datetime
from typing import Any

from clusterpulse_metricsource.fieldtypes import ConversionError
from clusterpulse_metricsource.textform import INT64_MIN, GoParseError, fstr, parse_go_float, parse_go_int

from clusterpulse_core.hookspecs import Register
from clusterpulse_core.quantity import quantity_value


def register_builtin_field_types(register: Register) -> None:
    """Register the seven built-in field types."""
    register("string", fstr, convert_default=keep_text)
    register("integer", to_integer, convert_default=default_integer)
    register("float", to_float, convert_default=default_float)
    register("boolean", to_boolean, convert_default=default_boolean)
    register("quantity", to_quantity, convert_default=to_quantity)
    register("timestamp", to_timestamp, convert_default=keep_text)
    register("arrayLength", to_array_length, convert_default=default_integer)


def keep_text(text: str) -> str:
    """A default stored as written."""
    return text


def to_integer(value: Any) -> int:
    """int as is; float truncated toward zero; strict base-10 strings; anything else fails with 0."""
    if isinstance(value, bool):
        raise ConversionError("cannot convert a boolean to an integer", 0)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or not -(2.0**63) <= value < 2.0**63:
            raise ConversionError(f"{value!r} is out of the integer range", INT64_MIN)
        return int(value)
    if isinstance(value, str):
        try:
            return parse_go_int(value)
        except GoParseError as exc:
            raise ConversionError(str(exc), exc.value) from exc
    raise ConversionError(f"cannot convert {type(value).__name__} to an integer", 0)


def default_integer(text: str) -> int:
    """A strict base-10 integer default, else 0 (also on overflow)."""
    try:
        return parse_go_int(text)
    except GoParseError:
        return 0


def to_float(value: Any) -> float:
    """float as is; int widened; Go float syntax for strings; anything else fails with 0.0."""
    if isinstance(value, bool):
        raise ConversionError("cannot convert a boolean to a float", 0.0)
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError as exc:
            raise ConversionError("integer out of the float range", math.copysign(math.inf, value)) from exc
    if isinstance(value, str):
        try:
            return parse_go_float(value)
        except GoParseError as exc:
            raise ConversionError(str(exc), exc.value) from exc
    raise ConversionError(f"cannot convert {type(value).__name__} to a float", 0.0)


def default_float(text: str) -> float:
    """A Go float syntax default, else 0.0 (also on overflow)."""
    try:
        return parse_go_float(text)
    except GoParseError:
        return 0.0


def to_boolean(value: Any) -> bool:
    """bool as is; ``true`` (any case) or ``1`` for strings; numbers ``!= 0``; lists and maps fail."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.lower() == "true" or value == "1"
    if isinstance(value, int | float):
        return value != 0
    raise ConversionError(f"cannot convert {type(value).__name__} to a boolean", False)


def default_boolean(text: str) -> bool:
    """``true`` in any case is true; everything else (``1`` included) is false."""
    return text.lower() == "true"


def to_quantity(value: Any) -> float:
    """A Kubernetes quantity in base units as a float (Q2); text that is not a quantity gives 0.0."""
    return _quantity_of_text(value if type(value) is str else fstr(value))


@functools.lru_cache(maxsize=4096)
def _quantity_of_text(text: str) -> float:
    # Clusters repeat a few quantity strings ("100m", "256Mi") across thousands of objects, and the
    # exact (fraction) parse is the most expensive step of extraction, so answers are cached.
    if not text:
        return 0.0
    try:
        return quantity_value(text)
    except ValueError:
        return 0.0


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-](\d{2}):(\d{2}))\Z")


def to_timestamp(value: Any) -> str:
    """The original text when it is an RFC 3339 time (upper-case ``T``/``Z``); ``""`` stays ``""``."""
    text = fstr(value)
    if text == "":
        return ""
    match = _RFC3339.match(text)
    if match is None:
        raise ConversionError(f"not an RFC 3339 time: {text!r}", "")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise ConversionError(f"not an RFC 3339 time: {text!r}", "") from exc
    if match.group(9) is not None and (int(match.group(9)) > 23 or int(match.group(10)) > 59):
        raise ConversionError(f"time zone offset out of range: {text!r}", "")
    return text


def to_array_length(value: Any) -> int:
    """The number of items of a list or keys of a map; anything else fails with 0."""
    if isinstance(value, list | tuple | dict):
        return len(value)
    raise ConversionError(f"cannot take the length of {type(value).__name__}", 0)
