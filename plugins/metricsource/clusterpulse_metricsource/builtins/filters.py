"""Built-in aggregation filter operators (docs/compatibility.md#metricsource-language).

A predicate receives the resource's field value (never ``None``: a missing or null field fails
every operator before the predicate is called) and the filter's ``value`` string.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from clusterpulse_metricsource.textform import GoParseError, filter_text, parse_go_float, parse_go_int

from clusterpulse_core.hookspecs import Register


def register_builtin_filter_operators(register: Register) -> None:
    """Register the nine built-in filter operators."""
    register("equals", equals)
    register("notEquals", not_equals)
    register("contains", contains)
    register("startsWith", starts_with)
    register("endsWith", ends_with)
    register("greaterThan", greater_than)
    register("lessThan", less_than)
    register("in", one_of)
    register("matches", matches)


def equals(field: Any, value: str) -> bool:
    """Typed equality: strings exactly, numbers after parsing ``value``, bools as ``true``/``false``."""
    if isinstance(field, str):
        return field == value
    if isinstance(field, bool):
        return value in ("true", "false") and field == (value == "true")
    if isinstance(field, float):
        try:
            return field == parse_go_float(value)
        except GoParseError:
            return False
    if isinstance(field, int):
        try:
            return field == parse_go_int(value)
        except GoParseError:
            return False
    return filter_text(field) == value


def not_equals(field: Any, value: str) -> bool:
    """The negation of :func:`equals`."""
    return not equals(field, value)


def contains(field: Any, value: str) -> bool:
    """Whether the field's text contains ``value``."""
    return value in filter_text(field)


def starts_with(field: Any, value: str) -> bool:
    """Whether the field's text starts with ``value``."""
    return filter_text(field).startswith(value)


def ends_with(field: Any, value: str) -> bool:
    """Whether the field's text ends with ``value``."""
    return filter_text(field).endswith(value)


def _number(value: Any) -> float:
    """Numbers as they are; strings parsed (0 when invalid, ±inf on overflow); anything else 0."""
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return parse_go_float(value)
        except GoParseError as exc:
            return float(exc.value)
    return 0.0


def greater_than(field: Any, value: str) -> bool:
    """``num(field) > num(value)``."""
    return _number(field) > _number(value)


def less_than(field: Any, value: str) -> bool:
    """``num(field) < num(value)``."""
    return _number(field) < _number(value)


def one_of(field: Any, value: str) -> bool:
    """Whether the field's text equals one item of ``[a, b, c]`` (brackets and spaces trimmed)."""
    text = filter_text(field)
    return any(item.strip() == text for item in value.strip("[]").split(","))


def matches(field: Any, value: str) -> bool:
    """Whether the regular expression ``value`` is found in the field's text; invalid patterns fail."""
    pattern = _regex(value)
    return pattern is not None and pattern.search(filter_text(field)) is not None


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(_re2_anchors(pattern))
    except (re.error, RecursionError, OverflowError):
        return None


_MULTILINE_FLAG = re.compile(r"\(\?[a-zA-Z]*m")


def _re2_anchors(pattern: str) -> str:
    """Make ``$`` mean end of text (RE2) rather than also before a final newline (Python)."""
    if _MULTILINE_FLAG.search(pattern):
        return pattern
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append(r"\Z")
            continue
        out.append(char)
    return "".join(out)
