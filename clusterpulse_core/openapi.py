"""Building blocks for the ``openAPIV3Schema`` of a declared kind (see :class:`ResourceKind`)."""

from __future__ import annotations

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


def secret_ref(description: str, namespace_description: str) -> Schema:
    """A ``{name, namespace}`` reference to a Secret; ``name`` is required."""
    return {
        "type": "object",
        "description": description,
        "required": ["name"],
        "properties": {
            "name": {**STRING, "description": "Secret name."},
            "namespace": {**STRING, "description": namespace_description},
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
