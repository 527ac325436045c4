"""The MonitorAccessPolicy custom resource kind (generated CRD; see docs/policies.md)."""

from __future__ import annotations

from typing import Any

from clusterpulse_core.kinds import PrinterColumn, ResourceKind
from clusterpulse_core.openapi import BOOLEAN, CONDITIONS, STRING, resource_schema
from clusterpulse_policy import speccheck

GROUP = "clusterpulse.io"
VERSION = "v1alpha1"

#: Longest ``matchPattern`` accepted (a regular expression).
MATCH_PATTERN_MAX_LENGTH = 256
PRIORITY_MIN, PRIORITY_MAX, PRIORITY_DEFAULT = 1, 10000, 100
EFFECTS = ("Allow", "Deny")
DEFAULT_ACCESS = ("allow", "deny", "none")
VISIBILITIES = ("all", "none", "filtered")
STATES = ("Active", "Inactive", "Error", "Pending", "Expired")


def _strings(description: str) -> dict[str, Any]:
    return {
        "type": "array",
        "maxItems": speccheck.MAX_ITEMS,
        "items": {**STRING, "maxLength": speccheck.MAX_STRING},
        "description": description,
    }


def _string_map(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "maxProperties": speccheck.MAX_ITEMS,
        "additionalProperties": {**STRING, "maxLength": speccheck.MAX_STRING},
        "description": description,
    }


def _allow_deny(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": {
            "allowed": _strings("Names or patterns (* and ?) let through."),
            "denied": _strings("Names or patterns (* and ?) hidden; denied wins over allowed."),
        },
    }


_SUBJECTS: dict[str, Any] = {
    "type": "object",
    "description": "Who the policy applies to.",
    "properties": {
        "users": _strings("User names (as the API's authenticating proxy gives them)."),
        "groups": _strings("Group names."),
        "serviceAccounts": {
            "type": "array",
            "description": "Service accounts.",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {**STRING, "description": "Service account name."},
                    "namespace": {**STRING, "default": "default", "description": "Its namespace."},
                },
            },
        },
    },
}

_RESOURCE: dict[str, Any] = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {
            **STRING,
            "minLength": 1,
            "description": "nodes, operators, namespaces, pods or a MetricSource rbac.resourceTypeName.",
        },
        "visibility": {**STRING, "enum": list(VISIBILITIES), "default": "all"},
        "filters": {
            "type": "object",
            "description": "What a filtered visibility lets through.",
            "properties": {
                "namespaces": _allow_deny("Namespaces."),
                "names": _allow_deny("Object names."),
                "labels": _string_map("Labels every shown object carries."),
                "fields": {
                    "type": "object",
                    "description": "Per field of a custom type.",
                    "additionalProperties": _allow_deny("Field values (compared as text)."),
                },
            },
        },
        "aggregations": {
            "type": "object",
            "description": "Aggregations of a custom type shown.",
            "properties": {
                "include": _strings("Aggregation names shown."),
                "exclude": _strings("Aggregation names hidden."),
            },
        },
    },
}

_RULE: dict[str, Any] = {
    "type": "object",
    "required": ["selector"],
    "properties": {
        "selector": {
            "type": "object",
            "description": "Which clusters the rule covers.",
            "properties": {
                "matchLabels": _string_map("Cluster labels, all equal."),
                "matchNames": _strings("Exact cluster names."),
                "matchPattern": {
                    **STRING,
                    "maxLength": MATCH_PATTERN_MAX_LENGTH,
                    "description": "Regular expression matched anywhere in the cluster name.",
                },
            },
        },
        "permissions": {
            "type": "object",
            "description": "Actions granted (view when unset).",
            "properties": {"view": dict(BOOLEAN), "viewMetrics": dict(BOOLEAN)},
        },
        "resources": {"type": "array", "items": _RESOURCE, "description": "Per resource type."},
    },
}

_SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["identity", "access", "scope"],
    "properties": {
        "identity": {
            "type": "object",
            "required": ["subjects"],
            "properties": {
                "subjects": _SUBJECTS,
                "priority": {
                    "type": "integer",
                    "format": "int32",
                    "minimum": PRIORITY_MIN,
                    "maximum": PRIORITY_MAX,
                    "default": PRIORITY_DEFAULT,
                    "description": "Higher first.",
                },
            },
        },
        "access": {
            "type": "object",
            "required": ["effect"],
            "properties": {
                "effect": {**STRING, "enum": list(EFFECTS)},
                "enabled": {**BOOLEAN, "default": True},
            },
        },
        "scope": {
            "type": "object",
            "required": ["clusters"],
            "properties": {
                "clusters": {
                    "type": "object",
                    "properties": {
                        "default": {
                            **STRING,
                            "enum": list(DEFAULT_ACCESS),
                            "default": "none",
                            "description": "Access to clusters no rule names.",
                        },
                        "rules": {"type": "array", "maxItems": speccheck.MAX_ITEMS, "items": _RULE},
                    },
                },
            },
        },
        "lifecycle": {
            "type": "object",
            "properties": {
                "validity": {
                    "type": "object",
                    "properties": {
                        "notBefore": {**STRING, "description": "RFC 3339 time the policy starts to apply."},
                        "notAfter": {**STRING, "description": "RFC 3339 time the policy stops applying."},
                    },
                },
            },
        },
    },
}

_INT = {"type": "integer"}

_STATUS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "state": {**STRING, "enum": list(STATES), "default": "Pending"},
        "message": dict(STRING),
        "compiledAt": dict(STRING),
        "hash": dict(STRING),
        "affectedUsers": dict(_INT),
        "affectedGroups": dict(_INT),
        "affectedServiceAccounts": dict(_INT),
        "customResourceTypes": dict(_INT),
        "customResourceWarnings": _strings("Declared for compatibility; not written."),
        "evaluationCount": {"type": "integer", "default": 0},
        "lastEvaluated": dict(STRING),
        "conditions": dict(CONDITIONS),
    },
}

SCHEMA = resource_schema(
    "MonitorAccessPolicy says which users, groups and service accounts see which clusters and resources "
    "through the ClusterPulse API.",
    _SPEC,
    _STATUS,
)

MONITOR_ACCESS_POLICY = ResourceKind(
    group=GROUP,
    version=VERSION,
    kind="MonitorAccessPolicy",
    plural="monitoraccesspolicies",
    singular="monitoraccesspolicy",
    schema=SCHEMA,
    namespaced=True,
    short_names=("map", "policy"),
    printer_columns=(
        PrinterColumn("State", "string", ".status.state"),
        PrinterColumn("Effect", "string", ".spec.access.effect"),
        PrinterColumn("Priority", "integer", ".spec.identity.priority"),
        PrinterColumn("Users", "integer", ".status.affectedUsers"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    status_subresource=True,
    workers=3,
)
