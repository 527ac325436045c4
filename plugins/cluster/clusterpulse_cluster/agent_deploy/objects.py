"""The Kubernetes objects of a collector agent, as frozen attrs classes (their wire form is serde's).

Names follow docs/compatibility.md#agent-deployment; every object also carries the owner labels and annotation
(:func:`owner_meta`) so the hub can tell its own objects, and whose they are, on a shared cluster.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from clusterpulse_core.serde import unstructure, wire

AGENT_NAMESPACE = "clusterpulse-system"
AGENT_NAME = "clusterpulse-collector"
TOKEN_SECRET = "clusterpulse-collector-token"
#: The agent's client certificate (mTLS), a ``kubernetes.io/tls`` Secret mounted at :data:`CLIENT_CERT_MOUNT`.
CLIENT_CERT_SECRET = "clusterpulse-collector-tls"
CLIENT_CERT_MOUNT = "/etc/ingester-client"
CA_CONFIGMAP = "ingester-ca"
CA_KEY = "service-ca.crt"
CA_MOUNT = "/etc/ingester-ca"

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "clusterpulse"
OWNER_NAMESPACE_LABEL = "clusterpulse.io/owner-namespace"
OWNER_NAME_LABEL = "clusterpulse.io/owner-name"
#: ``<namespace>/<name>`` of the owning ClusterConnection on the hub (always present; labels may not fit).
OWNER_ANNOTATION = "clusterpulse.io/owner"
DEPLOYMENT_LABELS = {
    "app.kubernetes.io/name": AGENT_NAME,
    "app.kubernetes.io/component": "collector",
    "app.kubernetes.io/part-of": "clusterpulse",
}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


@wire(case="camel", omit_empty=("name", "namespace", "labels", "annotations"))
@attrs.frozen
class ObjectMeta:
    """The ``metadata`` fields the hub sets."""

    name: str = ""
    namespace: str = ""
    labels: dict[str, str] = attrs.field(factory=dict)
    annotations: dict[str, str] = attrs.field(factory=dict)


@wire(case="camel")
@attrs.frozen
class Namespace:
    """``v1`` Namespace."""

    metadata: ObjectMeta
    api_version: str = "v1"
    kind: str = "Namespace"


@wire(case="camel")
@attrs.frozen
class ServiceAccount:
    """``v1`` ServiceAccount."""

    metadata: ObjectMeta
    api_version: str = "v1"
    kind: str = "ServiceAccount"


@wire(case="camel", omit_empty=("resource_names",))
@attrs.frozen
class PolicyRule:
    """One RBAC rule."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()


@wire(case="camel")
@attrs.frozen
class ClusterRole:
    """``rbac.authorization.k8s.io/v1`` ClusterRole."""

    metadata: ObjectMeta
    rules: tuple[PolicyRule, ...]
    api_version: str = "rbac.authorization.k8s.io/v1"
    kind: str = "ClusterRole"


@wire(case="camel")
@attrs.frozen
class RoleRef:
    """A binding's role."""

    name: str
    kind: str = "ClusterRole"
    api_group: str = "rbac.authorization.k8s.io"


@wire(case="camel")
@attrs.frozen
class Subject:
    """A binding's subject (a ServiceAccount)."""

    name: str
    namespace: str
    kind: str = "ServiceAccount"


@wire(case="camel")
@attrs.frozen
class ClusterRoleBinding:
    """``rbac.authorization.k8s.io/v1`` ClusterRoleBinding."""

    metadata: ObjectMeta
    role_ref: RoleRef
    subjects: tuple[Subject, ...]
    api_version: str = "rbac.authorization.k8s.io/v1"
    kind: str = "ClusterRoleBinding"


@wire(case="camel")
@attrs.frozen
class Secret:
    """``v1`` Secret; ``data`` values are base64 (what the API server returns, so it compares)."""

    metadata: ObjectMeta
    data: dict[str, str]
    type: str = "Opaque"
    api_version: str = "v1"
    kind: str = "Secret"


@wire(case="camel")
@attrs.frozen
class ConfigMap:
    """``v1`` ConfigMap."""

    metadata: ObjectMeta
    data: dict[str, str]
    api_version: str = "v1"
    kind: str = "ConfigMap"


@wire(case="camel")
@attrs.frozen
class SecretKeySelector:
    """``valueFrom.secretKeyRef``."""

    name: str
    key: str


@wire(case="camel")
@attrs.frozen
class EnvVarSource:
    """``valueFrom``."""

    secret_key_ref: SecretKeySelector


@wire(case="camel", omit_empty=("value", "value_from"))
@attrs.frozen
class EnvVar:
    """One container environment variable."""

    name: str
    value: str = ""
    value_from: EnvVarSource | None = None


@wire(case="camel")
@attrs.frozen
class ResourceList:
    """CPU and memory quantities."""

    cpu: str
    memory: str


@wire(case="camel")
@attrs.frozen
class ResourceRequirements:
    """Requests and limits."""

    requests: ResourceList
    limits: ResourceList


@wire(case="camel", omit_empty=("read_only",))
@attrs.frozen
class VolumeMount:
    """A container's volume mount."""

    name: str
    mount_path: str
    read_only: bool = False


@wire(case="camel")
@attrs.frozen
class SeccompProfile:
    """``seccompProfile``: the container runtime's default profile."""

    type: str = "RuntimeDefault"


@wire(case="camel")
@attrs.frozen
class Capabilities:
    """``capabilities``: every Linux capability dropped."""

    drop: tuple[str, ...] = ("ALL",)


#: The agent runs as the image's unprivileged user (the Containerfile's ``USER 10001:10001``).
AGENT_UID = 10001


@wire(case="camel")
@attrs.frozen
class SecurityContext:
    """A container's ``securityContext``: the controller's, which the ``restricted`` Pod Security level requires."""

    allow_privilege_escalation: bool = False
    read_only_root_filesystem: bool = True
    run_as_non_root: bool = True
    capabilities: Capabilities = Capabilities()
    seccomp_profile: SeccompProfile = SeccompProfile()


@wire(case="camel")
@attrs.frozen
class PodSecurityContext:
    """The pod's ``securityContext``: non-root with a numeric user, the runtime's seccomp profile."""

    run_as_non_root: bool = True
    run_as_user: int = AGENT_UID
    run_as_group: int = AGENT_UID
    seccomp_profile: SeccompProfile = SeccompProfile()


@wire(case="camel", omit_empty=("command",))
@attrs.frozen
class Container:
    """The agent container; empty ``volume_mounts`` is written as ``[]`` so a removed mount is removed."""

    name: str
    image: str
    env: tuple[EnvVar, ...]
    resources: ResourceRequirements
    command: tuple[str, ...] = ()
    volume_mounts: tuple[VolumeMount, ...] = ()
    security_context: SecurityContext = SecurityContext()


@wire(case="camel")
@attrs.frozen
class ConfigMapVolumeSource:
    """A volume's ConfigMap."""

    name: str


@wire(case="camel")
@attrs.frozen
class SecretVolumeSource:
    """A volume's Secret."""

    secret_name: str


@wire(case="camel", omit_empty=("config_map", "secret"))
@attrs.frozen
class Volume:
    """A pod volume from a ConfigMap or a Secret."""

    name: str
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None


@wire(case="camel")
@attrs.frozen
class PodSpec:
    """The pod spec fields the hub sets."""

    service_account_name: str
    containers: tuple[Container, ...]
    volumes: tuple[Volume, ...] = ()
    security_context: PodSecurityContext = PodSecurityContext()


@wire(case="camel")
@attrs.frozen
class PodTemplate:
    """``spec.template``."""

    metadata: ObjectMeta
    spec: PodSpec


@wire(case="camel")
@attrs.frozen
class LabelSelector:
    """``spec.selector``."""

    match_labels: dict[str, str]


@wire(case="camel")
@attrs.frozen
class DeploymentSpec:
    """``spec`` of the agent Deployment."""

    selector: LabelSelector
    template: PodTemplate
    replicas: int = 1


@wire(case="camel")
@attrs.frozen
class Deployment:
    """``apps/v1`` Deployment."""

    metadata: ObjectMeta
    spec: DeploymentSpec
    api_version: str = "apps/v1"
    kind: str = "Deployment"


@wire(case="camel")
@attrs.frozen
class NetworkPolicyPort:
    """One port of a NetworkPolicy rule."""

    port: int
    protocol: str = "TCP"


@wire(case="camel")
@attrs.frozen
class NetworkPolicyEgressRule:
    """Egress to these ports, any destination."""

    ports: tuple[NetworkPolicyPort, ...]


@wire(case="camel")
@attrs.frozen
class NetworkPolicySpec:
    """Every pod of the namespace; no ingress rule (all denied), egress only as listed."""

    egress: tuple[NetworkPolicyEgressRule, ...]
    pod_selector: LabelSelector = LabelSelector({})
    policy_types: tuple[str, ...] = ("Ingress", "Egress")


@wire(case="camel")
@attrs.frozen
class NetworkPolicy:
    """``networking.k8s.io/v1`` NetworkPolicy."""

    metadata: ObjectMeta
    spec: NetworkPolicySpec
    api_version: str = "networking.k8s.io/v1"
    kind: str = "NetworkPolicy"


AgentObject = (
    Namespace | ServiceAccount | ClusterRole | ClusterRoleBinding | Secret | ConfigMap | NetworkPolicy | Deployment
)


@attrs.frozen
class ObjectType:
    """Where objects of one kind live in the API."""

    kind: str
    group_version: str
    plural: str
    namespaced: bool

    def path(self, name: str = "", namespace: str = "") -> str:
        """The collection path, or the object's when ``name`` is given."""
        base = f"/api/{self.group_version}" if "/" not in self.group_version else f"/apis/{self.group_version}"
        if self.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


OBJECT_TYPES: dict[type, ObjectType] = {
    Namespace: ObjectType("Namespace", "v1", "namespaces", False),
    ServiceAccount: ObjectType("ServiceAccount", "v1", "serviceaccounts", True),
    ClusterRole: ObjectType("ClusterRole", "rbac.authorization.k8s.io/v1", "clusterroles", False),
    ClusterRoleBinding: ObjectType("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    Secret: ObjectType("Secret", "v1", "secrets", True),
    ConfigMap: ObjectType("ConfigMap", "v1", "configmaps", True),
    NetworkPolicy: ObjectType("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", True),
    Deployment: ObjectType("Deployment", "apps/v1", "deployments", True),
}


def object_type(obj: AgentObject) -> ObjectType:
    """The API location of ``obj``'s kind."""
    return OBJECT_TYPES[type(obj)]


def object_path(obj: AgentObject) -> str:
    """The REST path of ``obj``."""
    return object_type(obj).path(obj.metadata.name, obj.metadata.namespace)


def describe(obj: AgentObject) -> str:
    """``Kind [namespace/]name`` for messages."""
    meta = obj.metadata
    where = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
    return f"{object_type(obj).kind} {where}"


def to_wire(obj: AgentObject) -> dict[str, Any]:
    """The object as the API server takes it (the one converter decides the form)."""
    body = unstructure(obj)
    assert isinstance(body, dict)
    return body


@attrs.frozen
class Owner:
    """The hub-side ClusterConnection that owns a set of agent objects."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        """The owner named by an ``OWNER_ANNOTATION`` value; ``None`` unless both parts are valid
        Kubernetes names (the text comes from a managed cluster and ends up in a hub API path)."""
        namespace, sep, name = text.partition("/")
        if sep and _DNS_LABEL.match(namespace) and _DNS_SUBDOMAIN.match(name):
            return cls(namespace, name)
        return None


def owner_meta(owner: Owner, name: str, namespace: str = "", labels: dict[str, str] | None = None) -> ObjectMeta:
    """Metadata carrying the managed-by label, the owner labels (where they fit) and the owner annotation."""
    all_labels = {MANAGED_BY: MANAGER, **(labels or {})}
    for key, value in ((OWNER_NAMESPACE_LABEL, owner.namespace), (OWNER_NAME_LABEL, owner.name)):
        if _LABEL_VALUE.match(value):
            all_labels[key] = value
    return ObjectMeta(name=name, namespace=namespace, labels=all_labels, annotations={OWNER_ANNOTATION: str(owner)})


def owner_of(live: Any) -> Owner | None:
    """The owner recorded on a live object, ``None`` when the hub did not create it."""
    meta = live.get("metadata") if isinstance(live, dict) else None
    if not isinstance(meta, dict):
        return None
    if (meta.get("labels") or {}).get(MANAGED_BY) != MANAGER:
        return None
    return Owner.parse(str((meta.get("annotations") or {}).get(OWNER_ANNOTATION) or ""))


#: Every object the hub may create, in removal order (namespaced first, the Namespace last).
REMOVAL_ORDER: tuple[tuple[ObjectType, str, str], ...] = (
    (OBJECT_TYPES[Deployment], AGENT_NAME, AGENT_NAMESPACE),
    (OBJECT_TYPES[NetworkPolicy], AGENT_NAME, AGENT_NAMESPACE),
    (OBJECT_TYPES[ConfigMap], CA_CONFIGMAP, AGENT_NAMESPACE),
    (OBJECT_TYPES[Secret], TOKEN_SECRET, AGENT_NAMESPACE),
    (OBJECT_TYPES[Secret], CLIENT_CERT_SECRET, AGENT_NAMESPACE),
    (OBJECT_TYPES[ServiceAccount], AGENT_NAME, AGENT_NAMESPACE),
    (OBJECT_TYPES[ClusterRoleBinding], AGENT_NAME, ""),
    (OBJECT_TYPES[ClusterRole], AGENT_NAME, ""),
    (OBJECT_TYPES[Namespace], AGENT_NAMESPACE, ""),
)


def describe_ref(otype: ObjectType, name: str, namespace: str) -> str:
    """``Kind [namespace/]name`` of a removal-order entry."""
    return f"{otype.kind} {namespace}/{name}" if namespace else f"{otype.kind} {name}"
