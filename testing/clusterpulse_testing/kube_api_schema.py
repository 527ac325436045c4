"""CRD structural-schema validation for the emulator, as the API server does on create and update.

Only what a structural schema says about types is checked: ``type`` (object, array, string,
integer, number, boolean), ``enum``, ``required``, ``properties``/``items``/
``additionalProperties``, ``nullable`` and ``x-kubernetes-int-or-string``. Unknown fields are
not errors (a real server prunes them); ``x-kubernetes-preserve-unknown-fields`` subtrees are
not looked into. Messages follow the API server's wording (one line)::

    spec.monitoring.interval: Invalid value: "string":
    spec.monitoring.interval in body must be of type integer: "string"

(Defaulting is a separate step, kept out of this module.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_JSON_TYPE = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _matches(value: Any, expected: str) -> bool:
    if expected == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return _type_of(value) == expected


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def validate(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Every type error of ``obj`` (apiVersion, kind and metadata are the server's) against ``schema``."""
    errors: list[str] = []
    properties = schema.get("properties") or {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        sub = properties.get(key)
        if isinstance(sub, Mapping):
            _check(value, sub, key, errors)
    return errors


def _check(value: Any, schema: Mapping[str, Any], path: str, errors: list[str]) -> None:
    if value is None:
        if not schema.get("nullable"):
            errors.append(
                f'{path}: Invalid value: "null": {path} in body must be of type {schema.get("type", "object")}: "null"'
            )
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _matches(value, "integer")):
            errors.append(
                f'{path}: Invalid value: "{_type_of(value)}": {path} in body must be of type '
                f'integer or string: "{_type_of(value)}"'
            )
        return
    expected = schema.get("type")
    if isinstance(expected, str) and not _matches(value, expected):
        errors.append(
            f'{path}: Invalid value: "{_type_of(value)}": {path} in body must be of type '
            f'{expected}: "{_type_of(value)}"'
        )
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = ", ".join(_quote(item) for item in enum)
        errors.append(f"{path}: Unsupported value: {_quote(value)}: supported values: {allowed}")
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return
    if isinstance(value, dict):
        for name in schema.get("required") or ():
            if name not in value:
                errors.append(f"{path}.{name}: Required value")
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None and isinstance(additional, Mapping):
                sub = additional
            if isinstance(sub, Mapping):
                _check(item, sub, f"{path}.{key}", errors)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _check(item, items, f"{path}[{index}]", errors)
