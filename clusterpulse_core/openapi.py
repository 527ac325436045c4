"""Building blocks for the ``openAPIV3Schema`` of a declared kind (see :class:`ResourceKind`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Schema = dict[str, Any]

STRING: Mapping[str, Any] = {"type": "string"}
BOOLEAN: Mapping[str, Any] = {"type": "boolean"}
INT32: Mapping[str, Any] = {"type": "integer", "format": "int32"}
DATE_TIME: Mapping[str, Any] = {"type": "string", "format": "date-time"}


#: ``status.conditions``: a list of ``metav1.Condition`` keyed by ``type`` (``Ready``).
CONDITIONS: Mapping[str, Any] = {
    "type": "array",
    "description": "Standard conditions (Ready) with reason, message, observedGeneration, lastTransitionTime.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {
        "type": "object",
        "required": ["type", "status", "lastTransitionTime", "reason", "message"],
        "properties": {
            "type": dict(STRING),
            "status": {**STRING, "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": dict(DATE_TIME),
            "reason": dict(STRING),
            "message": dict(STRING),
        },
    },
}


#: A DNS-1123 label (a namespace name), as the API server checks it.
DNS1123_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: A DNS-1123 subdomain (most object names), as the API server checks it.
DNS1123_SUBDOMAIN_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def secret_ref(description: str, namespace_description: str) -> Schema:
    """A ``{name, namespace}`` reference to a Secret; ``name`` is required."""
    return {
        "type": "object",
        "description": description,
        "required": ["name"],
        "properties": {
            "name": {
                **STRING,
                "description": "Secret name (a DNS-1123 subdomain).",
                "maxLength": 253,
                "pattern": DNS1123_SUBDOMAIN_PATTERN,
            },
            "namespace": {
                **STRING,
                "description": namespace_description,
                "maxLength": 63,
                "pattern": DNS1123_LABEL_PATTERN,
            },
        },
    }


def resource_schema(description: str, spec: Mapping[str, Any], status: Mapping[str, Any]) -> Schema:
    """The top-level schema of a custom resource: apiVersion, kind, metadata, spec and status."""
    return {
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": dict(STRING),
            "kind": dict(STRING),
            "metadata": {"type": "object"},
            "spec": dict(spec),
            "status": dict(status),
        },
    }


def apply_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` with the ``default``s of a structural schema applied, as an API server does.

    Walks ``properties``, ``items`` and ``additionalProperties``: a property that is absent
    (or ``null`` where the schema is not ``nullable``) takes a deep copy of its ``default``,
    and defaults inside the defaulted value apply too. A ``null`` without a default is
    dropped (pruned), as the API server does for non-nullable fields. The input is never
    modified: changed parts are copies, unchanged parts are shared.
    """
    defaulted, _changed = _defaulted(schema, value)
    return defaulted


def _defaulted(schema: Mapping[str, Any], value: Any) -> tuple[Any, bool]:
    if isinstance(value, Mapping):
        return _defaulted_object(schema, value)
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        changed = False
        out = []
        for item in value:
            new, item_changed = _defaulted(items, item)
            out.append(new)
            changed = changed or item_changed
        return (out, True) if changed else (value, False)
    return value, False


def _defaulted_object(schema: Mapping[str, Any], value: Mapping[str, Any]) -> tuple[Any, bool]:
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    if not isinstance(properties, Mapping) and not isinstance(extra, Mapping):
        return value, False
    out: dict[str, Any] | None = None
    for key, sub in (properties or {}).items():
        if not isinstance(sub, Mapping):
            continue
        current = value.get(key)
        absent = key not in value
        if absent or (current is None and not sub.get("nullable", False)):
            if "default" in sub:
                new, _ = _defaulted(sub, copy.deepcopy(sub["default"]))
                out = dict(value) if out is None else out
                out[key] = new
            elif not absent:
                out = dict(value) if out is None else out
                del out[key]
            continue
        new, changed = _defaulted(sub, current)
        if changed:
            out = dict(value) if out is None else out
            out[key] = new
    if isinstance(extra, Mapping):
        for key, current in value.items():
            if isinstance(properties, Mapping) and key in properties:
                continue
            new, changed = _defaulted(extra, current)
            if changed:
                out = dict(value) if out is None else out
                out[key] = new
    return (out, True) if out is not None else (value, False)
