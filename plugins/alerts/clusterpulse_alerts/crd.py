"""The AlertRule kind: names, printer columns and ``openAPIV3Schema``."""

from __future__ import annotations

from typing import Any

from clusterpulse_model.fleet import CLUSTER_KIND

from clusterpulse_alerts.alertrule import (
    MAX_ALERT_NAME,
    MAX_CONDITION,
    MAX_EXPRESSION_VALUES,
    MAX_LABEL_KEY,
    MAX_LABEL_VALUE,
    MAX_MESSAGE,
    MAX_SELECTOR_ENTRIES,
)
from clusterpulse_core.kinds import PrinterColumn, ResourceKind
from clusterpulse_core.openapi import DATE_TIME, INT32, STRING, resource_schema

DURATION_PATTERN = r"^(0|([0-9]+(ms|s|m|h))+)$"

_LABEL_VALUE: dict[str, Any] = {**STRING, "maxLength": MAX_LABEL_VALUE}
_LABEL_SELECTOR: dict[str, Any] = {
    "type": "object",
    "description": "Clusters (by ClusterConnection spec.labels) the rule applies to; empty: every cluster.",
    "properties": {
        "matchLabels": {
            "type": "object",
            "maxProperties": MAX_SELECTOR_ENTRIES,
            "additionalProperties": _LABEL_VALUE,
        },
        "matchExpressions": {
            "type": "array",
            "maxItems": MAX_SELECTOR_ENTRIES,
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": {**STRING, "maxLength": MAX_LABEL_KEY},
                    "operator": {**STRING, "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "maxItems": MAX_EXPRESSION_VALUES, "items": _LABEL_VALUE},
                },
            },
        },
    },
    "x-kubernetes-map-type": "atomic",
}

_SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["condition"],
    "properties": {
        "clusterSelector": _LABEL_SELECTOR,
        "condition": {
            **STRING,
            "minLength": 1,
            "maxLength": MAX_CONDITION,
            "description": "MetricSource expression over the cluster metrics (pods_running > 100) and "
            "MetricSource aggregations (agg('pod-phases', 'by_phase', 'Failed') > 0); "
            "the alert fires while it is true.",
        },
        "severity": {**STRING, "enum": ["critical", "warning", "info"], "default": "warning"},
        "for": {
            **STRING,
            "pattern": DURATION_PATTERN,
            "maxLength": 32,
            "default": "0s",
            "description": "How long the condition must hold before firing (30s, 5m, 1h30m; at most 7 days).",
        },
        "message": {
            **STRING,
            "maxLength": MAX_MESSAGE,
            "description": "Alert message; {cluster}, {rule}, {severity} and any metric name in braces are replaced.",
        },
        "alertName": {
            **STRING,
            "minLength": 1,
            "maxLength": MAX_ALERT_NAME,
            "description": "Alert name shown by readers (default: metadata.name).",
        },
    },
}

_STATUS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "phase": {**STRING, "enum": ["Ready", "Error"]},
        "message": dict(STRING),
        "errorPosition": {**INT32, "description": "0-based character offset of the error in spec.condition."},
        "firingClusters": {**INT32, "description": "Clusters the rule fires on now."},
        "firing": {"type": "array", "items": dict(STRING), "description": "Those clusters (first 50)."},
        "lastEvaluated": dict(DATE_TIME),
        "observedGeneration": {"type": "integer", "format": "int64"},
    },
}

ALERT_RULE = ResourceKind(
    group="clusterpulse.io",
    version="v1alpha1",
    kind="AlertRule",
    plural="alertrules",
    singular="alertrule",
    short_names=("ar",),
    schema=resource_schema(
        "AlertRule fires an alert on every selected cluster where its condition holds.", _SPEC, _STATUS
    ),
    namespaced=True,
    printer_columns=(
        PrinterColumn("Severity", "string", ".spec.severity"),
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Firing", "integer", ".status.firingClusters"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    # With sharding: every replica evaluates every AlertRule on the clusters whose ClusterConnection
    # it holds (their pieces reach its engine only); the replica holding the rule writes the status.
    split_by=CLUSTER_KIND,
)
"""The AlertRule kind declared through ``clusterpulse_resource_kinds``."""
