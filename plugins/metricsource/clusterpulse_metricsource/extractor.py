"""Extracting one field's value from one object (docs/compatibility.md#metricsource-wire with M8 and M3)."""

from __future__ import annotations

import math
from typing import Any

import attrs
from clusterpulse_metricsource.errors import ExtractionError
from clusterpulse_metricsource.fieldtypes import FieldType
from clusterpulse_metricsource.paths import NOT_FOUND, Step, walk


def finite_or_none(value: Any) -> Any:
    """``None`` for NaN and ±inf (JSON cannot carry them, M3); anything else unchanged."""
    if type(value) is float and not math.isfinite(value):
        return None
    return value


def converted_default(field_type: FieldType, default: str | None) -> Any:
    """The field's ``default`` converted by its type once, at compile time (``None`` without one)."""
    if default is None:
        return None
    try:
        return finite_or_none(field_type.convert_default(default))
    except ValueError:
        return None


@attrs.frozen
class FieldExtractor:
    """One compiled field: where to look, how to convert, and what to use instead.

    ``fallback`` (the converted default, or ``None``) replaces a value that is missing, JSON
    ``null``, behind an invalid array index, or not convertible (M8).
    """

    name: str
    steps: tuple[Step, ...]
    field_type: FieldType
    fallback: Any = None

    def extract(self, obj: Any) -> Any:
        """The field's value in ``obj``; never raises."""
        try:
            found = walk(obj, self.steps)
        except ExtractionError:
            return self.fallback
        if found is NOT_FOUND or found is None:
            return self.fallback
        try:
            value = self.field_type.convert(found)
        except Exception:  # ConversionError, or a third-party converter's failure: never fail the resource
            return self.fallback
        return finite_or_none(value)
