"""The value rules of the MetricSource expression language, for plugin functions and aggregations.

Values are ``None``, ``bool``, ``int``, ``float`` and ``str`` (lists and maps can arrive from
a context but only ever get converted). A function registered with
``clusterpulse_register_functions`` receives such values and should treat them as the
built-ins do:

* as a number (:func:`to_number`): ``None`` is 0, ``True``/``False`` are 1/0, a numeric
  string is parsed with Go's rules (``"1e3"`` -> 1000.0), any other string is 0;
* as text (:func:`to_text`): ``None`` is ``""``, booleans are ``true``/``false``, numbers are
  printed as Go prints them (``3.0`` -> ``"3"``);
* as a condition (:func:`to_bool`): ``None``, ``False``, ``0`` and ``""`` are false.

An aggregation receives the non-null field values, which may mix numbers and text:
:func:`numbers` keeps the numbers (never bools), as ``sum``/``avg``/``percentile`` do.
These are the plain definitions of docs/compatibility.md#metricsource-language as amended by docs/compatibility.md
M1–M3; the compiled evaluator uses faster equivalents and property tests check they agree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any, cast

from clusterpulse_model.textform import go_float_v, go_v, scalar_text

INT64_MIN = -(2**63)
INT64_LIMIT = 2**63  # first value above the int64 range
_INT64_MIN_FLOAT = -9223372036854775808.0
_INT64_LIMIT_FLOAT = 9223372036854775808.0

# Go's strconv.ParseFloat syntax: decimal or hexadecimal (with a mandatory p exponent),
# underscores only between digits, no surrounding whitespace.
_DIGITS = r"[0-9](?:_?[0-9])*"
_HEX_DIGITS = r"[0-9a-fA-F](?:_?[0-9a-fA-F])*"
_DECIMAL = re.compile(rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?")
_HEXADECIMAL = re.compile(rf"[+-]?0[xX]_?(?:{_HEX_DIGITS}(?:\.(?:{_HEX_DIGITS})?)?|\.{_HEX_DIGITS})[pP][+-]?{_DIGITS}")
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE)


def parse_go_float(text: str) -> float | None:
    """The value of ``text`` under Go's ``strconv.ParseFloat`` rules, or None when invalid.

    ``inf``/``infinity`` (optionally signed) and ``nan`` in any case are accepted; a finite
    literal too large for a float (``1e400``) is a range error and gives None; underflow
    gives 0.0.
    """
    if _DECIMAL.fullmatch(text):
        value = float(text.replace("_", ""))
        return None if math.isinf(value) else value
    if _SPECIAL.fullmatch(text):
        return float(text)
    if _HEXADECIMAL.fullmatch(text):
        try:
            return float.fromhex(text.replace("_", ""))
        except OverflowError:
            return None
    return None


def to_float(value: Any) -> float:
    """``toFloat``: nil 0, bool 1/0, numbers as floats, numeric strings parsed (M2), else 0."""
    kind = type(value)
    if kind is float:
        return cast(float, value)
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        parsed = parse_go_float(value)
        return 0.0 if parsed is None else parsed
    return 0.0


def to_bool(value: Any) -> bool:
    """``toBool``: nil false, numbers ``!= 0`` (NaN is true), strings non-empty, else true."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        return value != ""
    return True


def to_string(value: Any) -> str:
    """``toString``: nil ``""``, bools ``true``/``false``, numbers as Go prints them."""
    if value is None:
        return ""
    text = scalar_text(value, format_float)
    return go_v(value) if text is None else text


def format_float(value: float) -> str:
    """A float as ``toString`` prints it: integral values in int64 range as integers, else Go ``%g``."""
    if math.isfinite(value) and value == int(value) and INT64_MIN <= value < INT64_LIMIT:
        return str(int(value))
    return go_float_v(value)


def is_number(value: Any) -> bool:
    """An int or a float, but not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def finite_or_none(value: Any) -> Any:
    """M3: a NaN or infinite float becomes None; everything else is returned unchanged."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def values_equal(left: Any, right: Any) -> bool:
    """M1 equality: numbers by value, strings by text, bools by value, nil equals nil only."""
    if left is None or right is None:
        return left is None and right is None
    if is_number(left) and is_number(right):
        return bool(left == right)
    if isinstance(left, bool) and isinstance(right, bool):
        return left == right
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    return False


def values_ordered(op: str, left: Any, right: Any) -> bool:
    """M1 ordering (``<``, ``<=``, ``>``, ``>=``): two numbers or two strings, else false."""
    comparable = (is_number(left) and is_number(right)) or (isinstance(left, str) and isinstance(right, str))
    if not comparable:
        return False
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    if op == ">=":
        return bool(left >= right)
    raise ValueError(f"not an ordering operator: {op}")


def go_int64(value: float) -> int:
    """Go's ``int64(f)`` on x86-64: truncation, and the minimum int64 when out of range or NaN."""
    if _INT64_MIN_FLOAT <= value < _INT64_LIMIT_FLOAT:
        return int(value)
    return INT64_MIN


def coerce_result(value: Any, result_type: str) -> Any:
    """docs/compatibility.md#metricsource-language result coercion by computed-field type (``""`` or any other type:
    unchanged).

    nil stays nil. M3: a non-finite number, or one outside int64 for ``integer``, gives nil.
    """
    if value is None:
        return None
    if result_type == "string":
        return to_string(value)
    if result_type == "integer":
        number = to_float(value)
        if not math.isfinite(number) or not INT64_MIN <= number < INT64_LIMIT:
            return None
        return int(number)
    if result_type == "float":
        return finite_or_none(to_float(value))
    if result_type == "boolean":
        return to_bool(value)
    return finite_or_none(value)


#: The conversions under the names the author's guide uses.
to_number = to_float
to_text = to_string


def numbers(values: Iterable[Any]) -> list[int | float]:
    """The numbers among ``values`` (ints and floats, not bools), in order: what numeric aggregations use."""
    return [value for value in values if is_number(value)]
