"""The operator helpers the compiled evaluator calls, tuned for the common cases.

Each helper has the semantics of the corresponding rule in :mod:`.interpreter` (M1–M3) but
tests the exact type first (``type(x) is float``), so a float operand costs one comparison;
everything else falls back to the conversions of :mod:`.values`. ``bool`` is a subclass of
``int`` in Python, which is why exact type tests are used throughout.
"""

from __future__ import annotations

import math
from typing import Any

from clusterpulse_metricsource.expr.values import is_number, to_bool, to_float, to_string, values_equal

_NUMBER_TYPES = (float, int)


def as_float(value: Any) -> float:
    """``toFloat`` with a fast path for floats."""
    return value if type(value) is float else to_float(value)


def fin(value: Any) -> Any:
    """M3 on any value: a non-finite float becomes None (``x - x`` is NaN exactly then)."""
    if type(value) is float and value - value != 0.0:
        return None
    return value


def neg(value: Any) -> float | None:
    """Unary minus."""
    result = -(value if type(value) is float else to_float(value))
    return result if result - result == 0.0 else None


def truthy(value: Any) -> bool:
    """``toBool`` with a fast path for bools."""
    return value if type(value) is bool else to_bool(value)


def concat(left: Any, right: Any) -> str:
    """``+`` when one side is a string."""
    return (left if type(left) is str else to_string(left)) + (right if type(right) is str else to_string(right))


def add(left: Any, right: Any) -> Any:
    """``+``: string concatenation if either side is a string, else float addition."""
    if type(left) is str or type(right) is str:
        return concat(left, right)
    result = (left if type(left) is float else to_float(left)) + (right if type(right) is float else to_float(right))
    return result if result - result == 0.0 else None


def sub(left: Any, right: Any) -> float | None:
    """``-`` on floats."""
    result = (left if type(left) is float else to_float(left)) - (right if type(right) is float else to_float(right))
    return result if result - result == 0.0 else None


def mul(left: Any, right: Any) -> float | None:
    """``*`` on floats."""
    result = (left if type(left) is float else to_float(left)) * (right if type(right) is float else to_float(right))
    return result if result - result == 0.0 else None


def div(left: Any, right: Any) -> float | None:
    """``/`` on floats; division by zero is None (M3)."""
    divisor = right if type(right) is float else to_float(right)
    if divisor == 0.0:
        return None
    result = (left if type(left) is float else to_float(left)) / divisor
    return result if result - result == 0.0 else None


def mod(left: Any, right: Any) -> float | None:
    """``%``: C ``fmod`` (sign of the dividend); modulo zero is None (M3)."""
    divisor = right if type(right) is float else to_float(right)
    dividend = left if type(left) is float else to_float(left)
    if divisor == 0.0 or divisor != divisor or dividend - dividend != 0.0:
        return None
    return math.fmod(dividend, divisor)


def eq(left: Any, right: Any) -> bool:
    """M1 equality: same-kind values by value, int and float by numeric value, else false."""
    left_type = type(left)
    if left_type is type(right) and (left_type is float or left_type is str or left_type is int or left_type is bool):
        return bool(left == right)
    if left_type in _NUMBER_TYPES and type(right) in _NUMBER_TYPES:
        return bool(left == right)
    return values_equal(left, right)  # nil, mixed kinds, and subclasses of the basic types


def ne(left: Any, right: Any) -> bool:
    """Negated M1 equality."""
    return not eq(left, right)


def _comparable(left: Any, right: Any) -> bool:
    """M1: two numbers (int or float, not bool) or two strings can be ordered."""
    left_type = type(left)
    right_type = type(right)
    if left_type in _NUMBER_TYPES and right_type in _NUMBER_TYPES:
        return True
    if left_type is str and right_type is str:
        return True
    return (is_number(left) and is_number(right)) or (isinstance(left, str) and isinstance(right, str))


def lt(left: Any, right: Any) -> bool:
    """``<`` under M1."""
    return _comparable(left, right) and bool(left < right)


def le(left: Any, right: Any) -> bool:
    """``<=`` under M1."""
    return _comparable(left, right) and bool(left <= right)


def gt(left: Any, right: Any) -> bool:
    """``>`` under M1."""
    return _comparable(left, right) and bool(left > right)


def ge(left: Any, right: Any) -> bool:
    """``>=`` under M1."""
    return _comparable(left, right) and bool(left >= right)


#: Helpers of the binary operators that evaluate both sides (name used in generated code).
BINARY_HELPERS = {
    "+": add,
    "-": sub,
    "*": mul,
    "/": div,
    "%": mod,
    "==": eq,
    "!=": ne,
    "<": lt,
    "<=": le,
    ">": gt,
    ">=": ge,
}
