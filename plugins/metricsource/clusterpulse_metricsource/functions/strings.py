"""String built-ins: ``concat``, ``lower``, ``upper``, ``len``, ``substr``, ``contains``,
``startsWith``, ``endsWith`` (docs/compatibility.md#metricsource-language).

Arguments go through ``toString``. Lengths and offsets count UTF-8 bytes, as the original
does; case mapping is per character (``upper('straße')`` is ``STRAßE``).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any

from clusterpulse_metricsource.expr.values import go_int64, to_float, to_string

_PER_BYTE_REPLACE = "clusterpulse-metricsource-replace-per-byte"


def _replace_one_byte(error: UnicodeError) -> tuple[str, int]:
    """Replace one invalid byte with U+FFFD and go on, as Go does for invalid UTF-8."""
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error(_PER_BYTE_REPLACE, _replace_one_byte)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def concat(*args: Any) -> str:
    """``concat(a, ...)``: the ``toString`` of every argument, joined (nil is empty)."""
    return "".join([to_string(arg) for arg in args])


def _simple_upper(char: str) -> str:
    """Unicode simple uppercase mapping of one character (no expansion: ß stays ß)."""
    upper = char.upper()
    if len(upper) == 1:
        return upper
    title = char.title()  # the simple titlecase mapping, when there is one (ᾳ -> ᾼ)
    return title if len(title) == 1 else char


def _simple_lower(char: str) -> str:
    """Unicode simple lowercase mapping of one character (İ -> i, Σ -> σ in any position)."""
    lower = char.lower()
    return lower if len(lower) == 1 else lower[0]


def upper(value: Any) -> str:
    """``upper(s)``: simple per-character uppercase."""
    text = to_string(value)
    if text.isascii():
        return text.upper()
    return "".join([_simple_upper(char) for char in text])


def lower(value: Any) -> str:
    """``lower(s)``: simple per-character lowercase."""
    text = to_string(value)
    if text.isascii():
        return text.lower()
    return "".join([_simple_lower(char) for char in text])


def len_(value: Any) -> float:
    """``len(s)``: the UTF-8 byte length of ``toString(s)``, as a float."""
    text = to_string(value)
    return float(len(text) if text.isascii() else len(_utf8(text)))


def substr(value: Any, start: Any, length: Any = None) -> str:
    """``substr(s, start[, length])``: UTF-8 bytes ``[start, start+length)``, clipped;
    a start outside the string or a negative length gives ``""`` (M12)."""
    data = _utf8(to_string(value))
    begin = go_int64(to_float(start))
    if begin < 0 or begin >= len(data):
        return ""
    end = len(data) if length is None else min(begin + go_int64(to_float(length)), len(data))
    if end < begin:
        return ""
    return data[begin:end].decode("utf-8", _PER_BYTE_REPLACE)


def contains(haystack: Any, needle: Any) -> bool:
    """``contains(s, part)`` on ``toString`` of both."""
    return to_string(needle) in to_string(haystack)


def starts_with(text: Any, prefix: Any) -> bool:
    """``startsWith(s, prefix)`` on ``toString`` of both."""
    return to_string(text).startswith(to_string(prefix))


def ends_with(text: Any, suffix: Any) -> bool:
    """``endsWith(s, suffix)`` on ``toString`` of both."""
    return to_string(text).endswith(to_string(suffix))


def register_functions(register: Callable[..., None]) -> None:
    """Register the string built-ins."""
    register("concat", concat, min_args=1, max_args=None, finite_results=True)
    register("lower", lower, min_args=1, max_args=1, finite_results=True)
    register("upper", upper, min_args=1, max_args=1, finite_results=True)
    register("len", len_, min_args=1, max_args=1, finite_results=True)
    register("substr", substr, min_args=2, max_args=3, finite_results=True)
    register("contains", contains, min_args=2, max_args=2, finite_results=True)
    register("startsWith", starts_with, min_args=2, max_args=2, finite_results=True)
    register("endsWith", ends_with, min_args=2, max_args=2, finite_results=True)
