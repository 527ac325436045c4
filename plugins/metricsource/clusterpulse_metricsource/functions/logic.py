"""Logic built-ins: ``coalesce`` (docs/compatibility.md#metricsource-language)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def coalesce(*args: Any) -> Any:
    """``coalesce(a, ...)``: the first argument that is not nil, unchanged (``false`` counts)."""
    for arg in args:
        if arg is not None:
            return arg
    return None


def register_functions(register: Callable[..., None]) -> None:
    """Register the logic built-ins."""
    register("coalesce", coalesce, min_args=1, max_args=None)
