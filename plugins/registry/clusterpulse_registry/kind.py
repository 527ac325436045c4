"""The RegistryConnection custom resource kind (docs/compatibility.md#crds)."""

from __future__ import annotations

from typing import Any

from clusterpulse_core.kinds import READ_REFERENCED_SECRETS, PrinterColumn, ResourceKind
from clusterpulse_core.openapi import BOOLEAN, CONDITIONS, DATE_TIME, INT32, STRING, resource_schema, secret_ref
from clusterpulse_registry import resource as bounds

GROUP = "clusterpulse.io"
VERSION = "v1alpha1"

_STRING = STRING
_BOOL = BOOLEAN
_INT32 = INT32
_TIME = DATE_TIME

_CREDENTIALS_REF = secret_ref(
    "Secret with keys username and password; it must exist (an Error naming it otherwise). "
    "Without credentialsRef the registry is checked anonymously.",
    "Secret namespace; defaults to the RegistryConnection's.",
)

_MONITORING: dict[str, Any] = {
    "type": "object",
    "description": "Health-check timing and catalog options.",
    "properties": {
        "interval": {
            **_INT32,
            "minimum": 0,
            "maximum": bounds.MAX_INTERVAL,
            "description": "Check period in seconds (default 60, minimum 30).",
        },
        "timeout": {
            **_INT32,
            "minimum": 0,
            "maximum": bounds.MAX_TIMEOUT,
            "description": "Health-check timeout in seconds (default 10).",
        },
        "checkCatalog": {**_BOOL, "description": "Also list the catalog (/v2/_catalog)."},
        "maxCatalogEntries": {
            **_INT32,
            "minimum": 0,
            "maximum": bounds.MAX_CATALOG_ENTRIES,
            "description": "Catalog entries to fetch at most (default 100).",
        },
    },
}

_SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["endpoint"],
    "properties": {
        "displayName": {**_STRING, "maxLength": bounds.MAX_DISPLAY_NAME, "description": "Human-friendly name."},
        "endpoint": {
            **_STRING,
            "minLength": 1,
            "maxLength": bounds.MAX_ENDPOINT,
            "description": "Registry base URL; https:// is assumed without a scheme.",
        },
        "type": {
            **_STRING,
            "maxLength": bounds.MAX_TYPE,
            "description": "Informational registry type (dockerhub, harbor, ecr, ...).",
        },
        "credentialsRef": _CREDENTIALS_REF,
        "insecure": {**_BOOL, "description": "Plain HTTP: http:// is assumed without a scheme."},
        "skipTLSVerify": {**_BOOL, "description": "Do not verify the registry's TLS certificate."},
        "monitoring": _MONITORING,
        "labels": {
            "type": "object",
            "maxProperties": bounds.MAX_LABELS,
            "additionalProperties": {**_STRING, "maxLength": bounds.MAX_LABEL_VALUE},
            "description": "Free-form categorisation labels.",
        },
        "healthCheckPaths": {
            "type": "array",
            "maxItems": bounds.MAX_HEALTH_CHECK_PATHS,
            "items": {
                **_STRING,
                "maxLength": bounds.MAX_HEALTH_CHECK_PATH,
                "pattern": bounds.HEALTH_CHECK_PATH_PATTERN,
            },
            "description": "Declared for compatibility; only /v2/ is probed.",
        },
    },
}

_STATUS: dict[str, Any] = {
    "type": "object",
    "required": ["available"],
    "properties": {
        "phase": {**_STRING, "description": "Connecting, Connected, Error or Unknown."},
        "health": {**_STRING, "description": "healthy, degraded or unhealthy."},
        "available": {**_BOOL, "description": "The registry answered /v2/ with 200 or 401."},
        "lastCheckTime": _TIME,
        "responseTime": {"type": "integer", "format": "int64", "description": "Milliseconds of GET /v2/."},
        "message": _STRING,
        "repositoryCount": {"type": "integer"},
        "version": {**_STRING, "description": "Docker-Distribution-Api-Version header."},
        "features": {"type": "object", "additionalProperties": _BOOL},
        "conditions": dict(CONDITIONS),
    },
}

SCHEMA = resource_schema(
    "RegistryConnection health-monitors one container registry through the Docker Registry HTTP API v2.", _SPEC, _STATUS
)

REGISTRY_CONNECTION = ResourceKind(
    group=GROUP,
    version=VERSION,
    kind="RegistryConnection",
    plural="registryconnections",
    singular="registryconnection",
    schema=SCHEMA,
    namespaced=True,
    short_names=("rc", "regcon"),
    printer_columns=(
        PrinterColumn("Display Name", "string", ".spec.displayName"),
        PrinterColumn("Endpoint", "string", ".spec.endpoint"),
        PrinterColumn("Type", "string", ".spec.type"),
        PrinterColumn("Available", "boolean", ".status.available"),
        PrinterColumn("Health", "string", ".status.health"),
        PrinterColumn("Response Time", "integer", ".status.responseTime"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    status_subresource=True,
    workers=5,
    sharded=True,
    hub_access=(READ_REFERENCED_SECRETS,),
)
