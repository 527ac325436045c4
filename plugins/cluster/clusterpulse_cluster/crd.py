"""The ClusterConnection custom resource kind (docs/compatibility.md#crds)."""

from __future__ import annotations

from typing import Any

from clusterpulse_model.fleet import CLUSTER_KIND

from clusterpulse_cluster import spec
from clusterpulse_core.kinds import READ_DISCOVERY, READ_REFERENCED_SECRETS, ApiAccess, PrinterColumn, ResourceKind
from clusterpulse_core.openapi import CONDITIONS, DATE_TIME, INT32, STRING, resource_schema, secret_ref

GROUP = "clusterpulse.io"
VERSION = "v1alpha1"

_STRING = STRING
_INT32 = INT32
_TIME = DATE_TIME

_CREDENTIALS_REF = secret_ref(
    "Secret holding the bearer token (key token) and optional CA (key ca.crt).",
    "Secret namespace; defaults to the ClusterConnection's.",
)

_MONITORING: dict[str, Any] = {
    "type": "object",
    "description": "Timing knobs.",
    "properties": {
        "interval": {
            **_INT32,
            "minimum": 0,
            "maximum": spec.MAX_INTERVAL,
            "description": "Reconcile period in seconds (0 = the default, 30; below 30 is raised to 30).",
        },
        "timeout": {
            **_INT32,
            "minimum": 0,
            "maximum": spec.MAX_TIMEOUT,
            "description": "Connection-test timeout and reconcile deadline in seconds (0 = the defaults).",
        },
    },
}

_SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["endpoint", "credentialsRef"],
    "properties": {
        "displayName": {**_STRING, "maxLength": spec.MAX_DISPLAY_NAME, "description": "Human-friendly name."},
        "endpoint": {
            **_STRING,
            "minLength": 1,
            "maxLength": spec.MAX_ENDPOINT,
            "description": "API server URL of the target cluster.",
        },
        "credentialsRef": _CREDENTIALS_REF,
        "labels": {
            "type": "object",
            "maxProperties": spec.MAX_LABELS,
            "additionalProperties": {**_STRING, "maxLength": spec.MAX_LABEL_VALUE},
            "description": "Free-form categorisation labels.",
        },
        "monitoring": _MONITORING,
        "collectionMode": {
            **_STRING,
            "enum": ["pull", "push"],
            "default": "pull",
            "description": "How data is collected.",
        },
        "ingesterAddress": {
            **_STRING,
            "maxLength": spec.MAX_INGESTER_ADDRESS,
            "pattern": spec.INGESTER_ADDRESS_PATTERN,
            "description": "host:port of the hub ingester (push mode).",
        },
        "collectorVersion": {
            **_STRING,
            "pattern": spec.COLLECTOR_VERSION_PATTERN,
            "description": "Image tag override for the collector agent.",
        },
    },
}

_COLLECTOR_STATUS: dict[str, Any] = {
    "type": "object",
    "required": ["connected"],
    "properties": {
        "connected": {"type": "boolean"},
        "lastHeartbeat": _TIME,
        "version": _STRING,
    },
}

_AGENT_STATUS: dict[str, Any] = {
    "type": "object",
    "description": "Push mode: the collector agent the hub installs on the cluster.",
    "properties": {
        "deployed": {"type": "boolean", "description": "Every agent object is in place on the cluster."},
        "version": {**_STRING, "description": "Image tag of the deployed agent."},
        "connected": {"type": "boolean", "description": "The agent's stream to the ingester is open."},
        "lastHeartbeat": {**_TIME, "description": "When the agent was last heard from."},
    },
}

_STATUS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "phase": _STRING,
        "lastSyncTime": _TIME,
        "health": _STRING,
        "message": _STRING,
        "nodes": {"type": "integer"},
        "namespaces": {"type": "integer"},
        "collectorStatus": _COLLECTOR_STATUS,
        "agent": _AGENT_STATUS,
        "conditions": dict(CONDITIONS),
    },
}

SCHEMA = resource_schema(
    "ClusterConnection registers one remote Kubernetes/OpenShift cluster to be monitored.", _SPEC, _STATUS
)

#: Push mode, agent deployment: the finalizer (get/patch of the ClusterConnection) and the CA bundle;
#: the ingester watches the Secrets of the hub namespace (collector tokens: checked from memory, and
#: a changed token ends its agent's stream at once) and the agent deploy creates each cluster's collector token.
AGENT_HUB_ACCESS = (
    ApiAccess(GROUP, ("clusterconnections",), ("get", "patch")),
    ApiAccess("", ("configmaps",), ("get",)),
    ApiAccess("", ("secrets",), ("list", "watch")),
    # The collector token minted per push cluster (docs/push-mode.md#collector-tokens), and the ingester's
    # own CA and server certificate (docs/push-mode.md#tls).
    ApiAccess("", ("secrets",), ("create",)),
    ApiAccess("", ("secrets",), ("update",), resource_names=("clusterpulse-ingester-ca", "clusterpulse-ingester-tls")),
    # The ingester's CA bundle, published for the agent deploy (the default COLLECTOR_CA_CONFIGMAP).
    ApiAccess("", ("configmaps",), ("create",)),
    ApiAccess("", ("configmaps",), ("update",), resource_names=("ingester-ca",)),
)
_AGENT_NS, _AGENT, _AGENT_TOKEN, _AGENT_CLIENT, _AGENT_CA = (
    "clusterpulse-system",
    "clusterpulse-collector",
    "clusterpulse-collector-token",
    "clusterpulse-collector-tls",  # the agent's client certificate (mTLS)
    "ingester-ca",
)
_RBAC = "rbac.authorization.k8s.io"
#: Push mode: what the hub does on the managed cluster to install and remove the agent (agent_deploy/),
#: scoped to the agent's namespace (a Role there) and to the agent objects' names wherever Kubernetes
#: allows (``create`` cannot be narrowed by name); no Secret access outside that namespace. The
#: Namespace itself is created with these manifests (the hub uses it and never removes it). Plus
#: everything the agent's ClusterRole grants (Kubernetes lets a role be created only by someone who
#: holds what it grants). MetricSource types are added with ``clusterpulse rbac --managed --read``.
AGENT_MANAGED_ACCESS = (
    ApiAccess("", ("namespaces",), ("get",), resource_names=(_AGENT_NS,)),
    ApiAccess(_RBAC, ("clusterroles", "clusterrolebindings"), ("create",)),
    ApiAccess(_RBAC, ("clusterroles", "clusterrolebindings"), ("get", "patch", "delete"), resource_names=(_AGENT,)),
    ApiAccess("", ("serviceaccounts", "secrets", "configmaps"), ("create",), namespace=_AGENT_NS),
    ApiAccess("apps", ("deployments",), ("create",), namespace=_AGENT_NS),
    ApiAccess("networking.k8s.io", ("networkpolicies",), ("create",), namespace=_AGENT_NS),
    ApiAccess(
        "networking.k8s.io",
        ("networkpolicies",),
        ("get", "patch", "delete"),
        resource_names=(_AGENT,),
        namespace=_AGENT_NS,
    ),
    ApiAccess("", ("serviceaccounts",), ("get", "patch", "delete"), resource_names=(_AGENT,), namespace=_AGENT_NS),
    ApiAccess(
        "", ("secrets",), ("get", "patch", "delete"), resource_names=(_AGENT_TOKEN, _AGENT_CLIENT), namespace=_AGENT_NS
    ),
    ApiAccess("", ("configmaps",), ("get", "patch", "delete"), resource_names=(_AGENT_CA,), namespace=_AGENT_NS),
    ApiAccess("apps", ("deployments",), ("get", "patch", "delete"), resource_names=(_AGENT,), namespace=_AGENT_NS),
    ApiAccess("", ("namespaces", "nodes", "persistentvolumeclaims", "pods", "services"), ("get", "list", "watch")),
    ApiAccess("apps", ("daemonsets", "deployments", "statefulsets"), ("get", "list", "watch")),
    ApiAccess("config.openshift.io", ("clusteroperators",), ("get", "list", "watch")),
    ApiAccess("operators.coreos.com", ("clusterserviceversions", "subscriptions"), ("get", "list", "watch")),
    ApiAccess("config.openshift.io", ("clusterversions",), ("get", "list", "watch"), resource_names=("version",)),
    ApiAccess("route.openshift.io", ("routes",), ("get", "list", "watch"), resource_names=("console",)),
)

CLUSTER_CONNECTION = ResourceKind(
    group=GROUP,
    version=VERSION,
    kind=CLUSTER_KIND,
    plural="clusterconnections",
    singular="clusterconnection",
    schema=SCHEMA,
    namespaced=True,
    short_names=("cc",),
    printer_columns=(
        PrinterColumn("Display Name", "string", ".spec.displayName"),
        PrinterColumn("Endpoint", "string", ".spec.endpoint"),
        PrinterColumn("Status", "string", ".status.phase"),
        PrinterColumn("Health", "string", ".status.health"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    status_subresource=True,
    workers=10,
    sharded=True,
    hub_access=(
        READ_REFERENCED_SECRETS,
        *AGENT_HUB_ACCESS,
    ),
    # What the collectors read on a managed cluster (inventory, counts, resources, info, olm,
    # clusteroperators).
    managed_access=(
        ApiAccess("", ("nodes", "pods", "namespaces", "services", "persistentvolumeclaims"), ("list",)),
        ApiAccess("apps", ("deployments", "statefulsets", "daemonsets"), ("list",)),
        ApiAccess("config.openshift.io", ("clusterversions",), ("get",), resource_names=("version",)),
        ApiAccess("config.openshift.io", ("clusteroperators",), ("list",)),
        ApiAccess("route.openshift.io", ("routes",), ("get",), resource_names=("console",)),
        ApiAccess("operators.coreos.com", ("subscriptions",), ("list",)),
        ApiAccess("operators.coreos.com", ("clusterserviceversions",), ("get",)),
        READ_DISCOVERY,
        # The agent sweep (docs/agent-deploy.md) reads the agent objects by name, the token Secret excepted.
        ApiAccess("", ("namespaces",), ("get",), resource_names=("clusterpulse-system",)),
        ApiAccess("", ("serviceaccounts",), ("get",), resource_names=("clusterpulse-collector",)),
        ApiAccess("", ("configmaps",), ("get",), resource_names=("ingester-ca",)),
        ApiAccess("apps", ("deployments",), ("get",), resource_names=("clusterpulse-collector",)),
        ApiAccess("networking.k8s.io", ("networkpolicies",), ("get",), resource_names=("clusterpulse-collector",)),
        ApiAccess(
            "rbac.authorization.k8s.io",
            ("clusterroles", "clusterrolebindings"),
            ("get",),
            resource_names=("clusterpulse-collector",),
        ),
    ),
    managed_push_access=AGENT_MANAGED_ACCESS,
)
