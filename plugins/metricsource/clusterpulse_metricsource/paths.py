"""Field paths: splitting a path into segments (docs/compatibility.md#metricsource-wire) and walking an object along
them (docs/compatibility.md#metricsource-wire).

Navigation works on plain decoded JSON (dicts and lists) and on the partial msgspec structs
built by :mod:`clusterpulse_metricsource.decoding`, so the CLI (``json.loads`` of a dump) and
the collector (typed partial decoding) share one walker.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import attrs
import msgspec
from clusterpulse_metricsource.errors import ExtractionError


class _NotFound:
    """The marker for "the path does not lead to a value" (distinct from a JSON ``null``)."""

    _instance: _NotFound | None = None

    def __new__(cls) -> _NotFound:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_FOUND"

    def __bool__(self) -> bool:
        return False


NOT_FOUND: Final = _NotFound()


def split_path(path: str) -> tuple[str, ...]:
    """Split a dotted path with bracketed segments (``.a[0].b`` -> ``a``, ``[0]``, ``b``)."""
    if path.startswith("."):
        path = path[1:]
    segments: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(path):
        char = path[i]
        if char == ".":
            if current:
                segments.append("".join(current))
                current = []
        elif char == "[":
            if current:
                segments.append("".join(current))
                current = []
            close = path.find("]", i)
            if close >= 0:
                segments.append(path[i : close + 1])
                i = close
        else:
            current.append(char)
        i += 1
    if current:
        segments.append("".join(current))
    return tuple(segments)


_INDEX = re.compile(r"[+-]?[0-9]+\Z")


@attrs.frozen
class Step:
    """One compiled navigation step: a map key, or a list index (``bad_index`` when unparsable)."""

    key: str
    index: int | None = None
    bad_index: str | None = None
    #: The attribute holding ``key`` in a partial-decoding struct (see :func:`step_attr`).
    attr: str = ""

    @property
    def is_index(self) -> bool:
        """Whether this is a bracket segment."""
        return self.index is not None or self.bad_index is not None


def compile_steps(segments: Sequence[str]) -> tuple[Step, ...]:
    """Turn path segments into navigation steps (bracket insides parsed once)."""
    steps = []
    for segment in segments:
        if len(segment) >= 2 and segment.startswith("[") and segment.endswith("]"):
            inside = segment[1:-1]
            if _INDEX.match(inside):
                steps.append(Step(segment, index=int(inside)))
            else:
                steps.append(Step(segment, bad_index=inside))
        else:
            steps.append(Step(segment, attr=step_attr(segment)))
    return tuple(steps)


def step_attr(key: str) -> str:
    """The partial-decoding struct attribute holding JSON key ``key`` (keys may be any text)."""
    return "k_" + key.encode("utf-8", "surrogatepass").hex()


def walk(root: Any, steps: Sequence[Step]) -> Any:
    """The value at the end of ``steps`` from ``root``, or :data:`NOT_FOUND`.

    Raises :class:`ExtractionError` (``invalid array index: x``) for a bracket segment that is
    not an integer, when navigation reaches it.
    """
    current = root
    for step in steps:
        if current is None or current is msgspec.UNSET:
            return NOT_FOUND
        if isinstance(current, msgspec.Struct):  # the collector's partial decoding: the common case
            current = getattr(current, step.attr, msgspec.UNSET) if step.attr else msgspec.UNSET
            if current is msgspec.UNSET:
                return NOT_FOUND
            continue
        if step.index is not None:
            if not isinstance(current, list):
                return NOT_FOUND
            if step.index < 0 or step.index >= len(current):
                return NOT_FOUND
            current = current[step.index]
        elif step.bad_index is not None:
            raise ExtractionError(f"invalid array index: {step.bad_index}")
        elif type(current) is dict:
            current = current.get(step.key, NOT_FOUND)
            if current is NOT_FOUND:
                return NOT_FOUND
        else:
            return NOT_FOUND
    if current is msgspec.UNSET:
        return NOT_FOUND
    return current


def navigate(obj: Any, segments: Sequence[str]) -> Any:
    """Walk plain decoded JSON along path segments (the ``navigate`` vectors)."""
    return walk(obj, compile_steps(segments))
