"""The field-type contract: a converter for found values and one for the string ``default``.

Field types are contributions (``clusterpulse_register_field_types``); the built-in ones live in
:mod:`clusterpulse_metricsource.builtins.field_types`. A converter raises
:class:`ConversionError` (a ``ValueError``) when it cannot convert; ``value`` then carries what
the upstream converter returned alongside its error, for diagnostics and the vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from clusterpulse_metricsource.textform import fstr

Converter = Callable[[Any], Any]
DefaultConverter = Callable[[str], Any]


class ConversionError(ValueError):
    """A found value that the field type cannot convert; ``value`` is upstream's fallback result."""

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


@attrs.frozen
class FieldType:
    """A registered field type: ``convert(found_value)`` and ``convert_default(default_text)``."""

    name: str
    convert: Converter
    convert_default: DefaultConverter


def _keep_default(text: str) -> str:
    return text


#: What an unknown type name behaves like: text form of the value, default kept as written.
UNKNOWN_TYPE = FieldType("", fstr, _keep_default)


def convert_value(field_type: FieldType, value: Any) -> tuple[Any, bool]:
    """``(converted, error)`` for a found value; ``None`` stays ``None`` without error."""
    if value is None:
        return None, False
    try:
        return field_type.convert(value), False
    except ConversionError as exc:
        return exc.value, True
    except ValueError:
        return None, True
