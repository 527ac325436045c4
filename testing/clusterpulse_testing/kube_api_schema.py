"""CRD structural-schema validation for the emulator, as the API server does on create and update.

What a structural schema can say is checked, in the API server's order (a value of the wrong type
is not looked into further): ``type`` (object, array, string, integer, number, boolean),
``nullable``, ``x-kubernetes-int-or-string``, ``enum``, ``minimum``/``maximum`` (with OpenAPI
3.0's boolean ``exclusiveMinimum``/``exclusiveMaximum``), ``multipleOf``, ``minLength``/
``maxLength`` (in characters), ``pattern``, ``minItems``/``maxItems``, ``uniqueItems``,
``minProperties``/``maxProperties``, ``required``, and ``properties``/``items``/
``additionalProperties`` below. Unknown fields are not errors (a real server prunes them);
``x-kubernetes-preserve-unknown-fields`` subtrees without ``properties`` are not looked into;
CEL rules (``x-kubernetes-validations``) and string ``format`` are not evaluated.

Each error is a :class:`FieldError`, worded as the API server words it (k8s.io/apimachinery
``field.Error``; the value shown as Go shows it)::

    spec.interval: Invalid value: "string": spec.interval in body must be of type integer: "string"
    spec.interval: Invalid value: -5: spec.interval in body should be greater than or equal to 0
    spec.endpoint: Too long: may not be more than 2048 bytes
    spec.labels: Too many: 65: must have at most 64 items
    spec.collectionMode: Unsupported value: "carrier-pigeon": supported values: "pull", "push"
    spec.credentialsRef: Required value

(Defaulting is a separate step, kept out of this module.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_JSON_TYPE = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


@dataclass(frozen=True)
class FieldError:
    """One schema violation: the field path, the ``StatusCause`` reason, and the message after the path."""

    field: str
    reason: str
    body: str

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"

    def cause(self) -> dict[str, str]:
        """The ``details.causes`` entry of the 422 ``Status``."""
        return {"reason": self.reason, "message": self.body, "field": self.field}


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


def _go(value: Any) -> str:
    """A value as ``field.Error`` prints it: strings quoted, numbers and booleans bare, the rest as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else repr(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, "FieldValueInvalid", f"Invalid value: {_go(value)}: {path} in body {detail}")


def _number(bound: Any) -> str:
    return _go(bound) if isinstance(bound, int | float) else str(bound)


_UNSET: Any = object()


def validate(
    obj: Mapping[str, Any], schema: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[FieldError]:
    """Every violation of ``schema`` by ``obj`` (apiVersion, kind and metadata are the server's).

    With ``old`` (an update), a part equal to the same part of ``old`` is not checked again, as
    the API server's validation ratcheting (on by default since Kubernetes 1.30) lets an object
    whose stored spec no longer validates still have its status written.
    """
    errors: list[FieldError] = []
    before = old if old is not None else {}
    properties = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in ("apiVersion", "kind", "metadata") and name not in obj:
            errors.append(FieldError(name, "FieldValueRequired", "Required value"))
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        sub = properties.get(key)
        if isinstance(sub, Mapping):
            _check(value, sub, key, errors, before.get(key, _UNSET) if old is not None else _UNSET)
    return errors


def _check(value: Any, schema: Mapping[str, Any], path: str, errors: list[FieldError], old: Any = _UNSET) -> None:
    if old is not _UNSET and old == value:
        return
    if value is None:
        if not schema.get("nullable"):
            expected = schema.get("type", "object")
            errors.append(_invalid(path, "null", f'must be of type {expected}: "null"'))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _matches(value, "integer")):
            errors.append(_invalid(path, _type_of(value), f'must be of type integer or string: "{_type_of(value)}"'))
        return
    expected = schema.get("type")
    if isinstance(expected, str) and not _matches(value, expected):
        errors.append(_invalid(path, _type_of(value), f'must be of type {expected}: "{_type_of(value)}"'))
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = ", ".join(_go(item) for item in enum)
        errors.append(
            FieldError(path, "FieldValueNotSupported", f"Unsupported value: {_go(value)}: supported values: {allowed}")
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, path, errors)
    elif isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, list):
        _check_list(value, schema, path, errors, old if isinstance(old, list) else None)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors, old if isinstance(old, dict) else None)


def _check_number(value: float, schema: Mapping[str, Any], path: str, errors: list[FieldError]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float):
        if schema.get("exclusiveMinimum") and value <= low:
            errors.append(_invalid(path, value, f"should be greater than {_number(low)}"))
        elif value < low:
            errors.append(_invalid(path, value, f"should be greater than or equal to {_number(low)}"))
    if isinstance(high, int | float):
        if schema.get("exclusiveMaximum") and value >= high:
            errors.append(_invalid(path, value, f"should be less than {_number(high)}"))
        elif value > high:
            errors.append(_invalid(path, value, f"should be less than or equal to {_number(high)}"))
    factor = schema.get("multipleOf")
    if isinstance(factor, int | float) and factor and (value / factor) % 1:
        errors.append(_invalid(path, value, f"should be a multiple of {_number(factor)}"))


def _check_string(value: str, schema: Mapping[str, Any], path: str, errors: list[FieldError]) -> None:
    longest, shortest, pattern = schema.get("maxLength"), schema.get("minLength"), schema.get("pattern")
    if isinstance(longest, int) and len(value) > longest:
        errors.append(FieldError(path, "FieldValueTooLong", f"Too long: may not be more than {longest} bytes"))
    if isinstance(shortest, int) and len(value) < shortest:
        errors.append(_invalid(path, value, f"should be at least {shortest} chars long"))
    if isinstance(pattern, str) and not re.search(pattern, value):
        errors.append(_invalid(path, value, f"should match '{pattern}'"))


def _check_count(value: Any, most: Any, least: Any, unit: str, path: str, errors: list[FieldError]) -> None:
    """``maxItems``/``minItems`` or ``maxProperties``/``minProperties`` (a real server says items for both maxima)."""
    if isinstance(most, int) and len(value) > most:
        errors.append(FieldError(path, "FieldValueTooMany", f"Too many: {len(value)}: must have at most {most} items"))
    if isinstance(least, int) and len(value) < least:
        errors.append(_invalid(path, value, f"should have at least {least} {unit}"))


def _check_list(
    value: list[Any], schema: Mapping[str, Any], path: str, errors: list[FieldError], old: list[Any] | None
) -> None:
    _check_count(value, schema.get("maxItems"), schema.get("minItems"), "items", path, errors)
    if schema.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if item in seen:
                errors.append(
                    FieldError(f"{path}[{len(seen)}]", "FieldValueDuplicate", f"Duplicate value: {_go(item)}")
                )
                break
            seen.append(item)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            before = old[index] if old is not None and index < len(old) else _UNSET
            _check(item, items, f"{path}[{index}]", errors, before)


def _check_object(
    value: dict[str, Any], schema: Mapping[str, Any], path: str, errors: list[FieldError], old: dict[str, Any] | None
) -> None:
    _check_count(value, schema.get("maxProperties"), schema.get("minProperties"), "properties", path, errors)
    for name in schema.get("required") or ():
        if name not in value:
            errors.append(FieldError(f"{path}.{name}", "FieldValueRequired", "Required value"))
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if isinstance(sub, Mapping):
            _check(item, sub, f"{path}.{key}", errors, old.get(key, _UNSET) if old is not None else _UNSET)
