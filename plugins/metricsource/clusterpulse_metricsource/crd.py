"""The MetricSource kind: names, printer columns and ``openAPIV3Schema`` (docs/compatibility.md#crds)."""

from __future__ import annotations

from typing import Any

from clusterpulse_metricsource import speccheck
from clusterpulse_metricsource.naming import API_VERSION_MAX_LENGTH, API_VERSION_PATTERN, KIND_MAX_LENGTH, KIND_PATTERN
from clusterpulse_model.fleet import CLUSTER_KIND, LIST_CLUSTERS

from clusterpulse_core.kinds import READ_DISCOVERY, READ_REFERENCED_SECRETS, ApiAccess, PrinterColumn, ResourceKind
from clusterpulse_core.openapi import resource_schema
from clusterpulse_core.wildcard import MAX_PATTERN_LENGTH


def _string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def _int32(minimum: int, default: int, key: str) -> dict[str, Any]:
    return {
        "type": "integer",
        "format": "int32",
        "minimum": minimum,
        "maximum": speccheck.COLLECTION_MAXIMUM[key],
        "default": default,
    }


def _strings(**item: Any) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", **item}}


# Upstream's CRD restricts these three to enums; plugins may register more (``median``), so the
# schema documents the built-ins instead of rejecting the rest. Every upstream value stays valid.
_PLUGGABLE = "Built-in {0}: {1}; plugins may register more."

_LABEL_SELECTOR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {"key": _string(), "operator": _string(), "values": _strings()},
            },
        },
    },
    "x-kubernetes-map-type": "atomic",
}

_SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["source", "fields"],
    "properties": {
        "source": {
            "type": "object",
            "required": ["apiVersion", "kind"],
            "properties": {
                "apiVersion": _string(
                    description="API version of the resource, e.g. v1, apps/v1",
                    pattern=API_VERSION_PATTERN,
                    maxLength=API_VERSION_MAX_LENGTH,
                ),
                "kind": _string(
                    description="Kind of the resource, e.g. PersistentVolumeClaim",
                    pattern=KIND_PATTERN,
                    maxLength=KIND_MAX_LENGTH,
                ),
                "scope": _string(enum=["Namespaced", "Cluster"], default="Namespaced"),
                "namespaces": {
                    "type": "object",
                    "description": "Namespace wildcard patterns; exclude wins",
                    "properties": {
                        "include": _strings(maxLength=MAX_PATTERN_LENGTH),
                        "exclude": _strings(maxLength=MAX_PATTERN_LENGTH),
                    },
                },
                "labelSelector": _LABEL_SELECTOR,
            },
        },
        "fields": {
            "type": "array",
            "maxItems": speccheck.MAX_ITEMS,
            "items": {
                "type": "object",
                "required": ["name", "path"],
                "properties": {
                    "name": _string(maxLength=speccheck.MAX_NAME),
                    "path": _string(
                        maxLength=speccheck.MAX_TEXT,
                        description="JSONPath-like path, e.g. .spec.resources.requests.storage",
                    ),
                    "type": _string(
                        default="string",
                        description=_PLUGGABLE.format(
                            "field types", "string, integer, float, boolean, quantity, timestamp, arrayLength"
                        ),
                    ),
                    "default": _string(description="Value used when the path is missing"),
                },
            },
        },
        "computed": {
            "type": "array",
            "maxItems": speccheck.MAX_ITEMS,
            "items": {
                "type": "object",
                "required": ["name", "expression"],
                "properties": {
                    "name": _string(maxLength=speccheck.MAX_NAME),
                    "expression": _string(maxLength=speccheck.MAX_EXPRESSION),
                    "type": _string(enum=["string", "integer", "float", "boolean"], default="float"),
                },
            },
        },
        "aggregations": {
            "type": "array",
            "maxItems": speccheck.MAX_ITEMS,
            "items": {
                "type": "object",
                "required": ["name", "function"],
                "properties": {
                    "name": _string(),
                    "field": _string(),
                    "function": _string(
                        description=_PLUGGABLE.format(
                            "aggregation functions", "count, sum, avg, min, max, percentile, distinct"
                        )
                    ),
                    "filter": {
                        "type": "object",
                        "required": ["field", "operator", "value"],
                        "properties": {
                            "field": _string(),
                            "operator": _string(
                                description=_PLUGGABLE.format(
                                    "filter operators",
                                    "equals, notEquals, contains, startsWith, endsWith, "
                                    "greaterThan, lessThan, in, matches",
                                )
                            ),
                            "value": _string(),
                        },
                    },
                    "groupBy": _string(),
                    "percentile": {"type": "integer", "format": "int32"},
                },
            },
        },
        "collection": {
            "type": "object",
            "properties": {
                "intervalSeconds": _int32(30, 60, "intervalSeconds"),
                "timeoutSeconds": _int32(5, 30, "timeoutSeconds"),
                "maxResources": _int32(1, 5000, "maxResources"),
                "batchSize": _int32(10, 500, "batchSize"),
                "retryAttempts": _int32(0, 3, "retryAttempts"),
                "parallelism": _int32(1, 3, "parallelism"),
            },
        },
        "rbac": {
            "type": "object",
            "required": ["resourceTypeName"],
            "properties": {
                "resourceTypeName": _string(),
                "filterableFields": _strings(),
                "filterAggregations": {"type": "boolean", "default": True},
            },
        },
    },
}

_STATUS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "phase": _string(enum=["Active", "Error", "Disabled"]),
        "lastCollectionTime": _string(format="date-time"),
        "lastCollectionDuration": _string(),
        "resourcesCollected": {"type": "integer"},
        "clustersCollected": {"type": "integer"},
        "errorsLastRun": {"type": "integer"},
        "message": _string(),
        # With sharding: each replica's share of the last collection, by replica identity.
        "shards": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "collectedAt": _string(format="date-time"),
                    "detail": _string(),
                    "clusters": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "resources": {"type": "integer"},
                                "errors": {"type": "integer"},
                                "failure": _string(),
                                "unknownKind": {"type": "boolean"},
                            },
                        },
                    },
                },
            },
        },
        "fieldValidation": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["field", "status"],
                "properties": {
                    "field": _string(),
                    "status": _string(enum=["valid", "invalid", "warning"]),
                    "message": _string(),
                },
            },
        },
        "conditions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "status", "lastTransitionTime", "reason", "message"],
                "properties": {
                    "type": _string(),
                    "status": _string(enum=["True", "False", "Unknown"]),
                    "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                    "lastTransitionTime": _string(format="date-time"),
                    "reason": _string(),
                    "message": _string(),
                },
            },
        },
    },
}

SCHEMA = resource_schema(
    "MetricSource declares a resource type to collect from every connected cluster, "
    "the fields to extract, computed fields and aggregations.",
    _SPEC,
    _STATUS,
)

METRIC_SOURCE = ResourceKind(
    group="clusterpulse.io",
    version="v1alpha1",
    kind="MetricSource",
    plural="metricsources",
    singular="metricsource",
    short_names=("ms", "metricsrc"),
    schema=SCHEMA,
    namespaced=True,
    printer_columns=(
        PrinterColumn("Source Kind", "string", ".spec.source.kind"),
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Resources", "integer", ".status.resourcesCollected"),
        PrinterColumn("Clusters", "integer", ".status.clustersCollected"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    # The fleet: connected ClusterConnections, and the Secrets holding their credentials.
    hub_access=(LIST_CLUSTERS, READ_REFERENCED_SECRETS),
    # Namespace patterns and discovery; the collected resource types themselves depend on the
    # MetricSources applied: add them with `clusterpulse rbac --managed --read GROUP/RESOURCE`.
    managed_access=(ApiAccess("", ("namespaces",), ("list",)), READ_DISCOVERY),
    # With sharding: every replica collects from the clusters whose ClusterConnection it holds.
    split_by=CLUSTER_KIND,
)
"""The MetricSource kind declared through ``clusterpulse_resource_kinds``."""
