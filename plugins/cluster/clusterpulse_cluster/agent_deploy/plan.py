"""What the hub wants on a managed cluster for one push-mode ClusterConnection
(docs/compatibility.md#agent-deployment)."""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import metadata

import attrs
from clusterpulse_model import AgentCertificate

from clusterpulse_cluster.agent_deploy.objects import (
    AGENT_NAME,
    AGENT_NAMESPACE,
    CA_CONFIGMAP,
    CA_KEY,
    CA_MOUNT,
    CLIENT_CERT_MOUNT,
    CLIENT_CERT_SECRET,
    DEPLOYMENT_LABELS,
    TOKEN_SECRET,
    AgentObject,
    ClusterRole,
    ClusterRoleBinding,
    ConfigMap,
    ConfigMapVolumeSource,
    Container,
    Deployment,
    DeploymentSpec,
    EnvVar,
    EnvVarSource,
    LabelSelector,
    Namespace,
    NetworkPolicy,
    NetworkPolicyEgressRule,
    NetworkPolicyPort,
    NetworkPolicySpec,
    ObjectMeta,
    Owner,
    PodSpec,
    PodTemplate,
    ResourceList,
    ResourceRequirements,
    RoleRef,
    Secret,
    SecretKeySelector,
    SecretVolumeSource,
    ServiceAccount,
    Subject,
    Volume,
    VolumeMount,
    owner_meta,
)
from clusterpulse_cluster.agent_deploy.rbac import agent_rules
from clusterpulse_core.rbac import POD_SECURITY_LABELS

_DEV = re.compile(r"(^dev$)|(\.dev\d*)|(\+)")


def controller_version() -> str:
    """This controller's build version (the core distribution's), ``""`` when not installed."""
    try:
        return metadata.version("clusterpulse-core")
    except metadata.PackageNotFoundError:
        return ""


def image_tag(collector_version: str, build_version: str) -> str:
    """docs/compatibility.md#agent-deployment: ``spec.collectorVersion``, else the controller's version; ``latest``
    for a dev build."""
    tag = collector_version.strip() or build_version.strip()
    if not tag or _DEV.search(tag):
        return "latest"
    return tag


def image_ref(image: str, tag: str) -> str:
    """``<image>:<tag>``; an image pinned by digest (``@sha256:...``) is used as given."""
    return image if "@" in image else f"{image}:{tag}"


def ingester_port(address: str) -> int | None:
    """The port of a ``host:port`` ingester address (``None`` when it names none)."""
    _host, sep, port = address.strip().rpartition(":")
    return int(port) if sep and port.isdigit() and 0 < int(port) < 65536 else None


#: Pod template annotation: a digest of the collector token (not the token), so a rotation rolls the agent.
TOKEN_ANNOTATION = "clusterpulse.io/collector-token-sha256"


@attrs.frozen
class AgentPlan:
    """The inputs of one agent installation; :meth:`objects` turns them into the
    docs/compatibility.md#agent-deployment objects."""

    owner: Owner
    cluster_name: str
    ingester_address: str
    token: str
    image: str
    version: str
    command: tuple[str, ...] = ()
    operator_scan_interval: int = 300
    tls_enabled: bool = False
    tls_server_name: str = ""
    #: PEM bundle copied to the managed cluster (TLS without the system CA), else ``None``.
    ca_bundle: str | None = None
    read_types: tuple[tuple[str, str], ...] = ()
    #: The agent's client certificate (mTLS, the ingester requires one), else ``None``.
    client_certificate: AgentCertificate | None = None

    def objects(self) -> list[tuple[str, AgentObject]]:
        """``(error prefix, object)`` in creation order (docs/compatibility.md#agent-deployment)."""
        meta = self._meta
        steps: list[tuple[str, AgentObject]] = [
            ("namespace", Namespace(meta(AGENT_NAMESPACE, labels=dict(POD_SECURITY_LABELS)))),
            ("serviceaccount", ServiceAccount(meta(AGENT_NAME, AGENT_NAMESPACE))),
            ("clusterrole", ClusterRole(meta(AGENT_NAME), agent_rules(self.read_types))),
            (
                "clusterrolebinding",
                ClusterRoleBinding(meta(AGENT_NAME), RoleRef(AGENT_NAME), (Subject(AGENT_NAME, AGENT_NAMESPACE),)),
            ),
            (
                "secret",
                Secret(meta(TOKEN_SECRET, AGENT_NAMESPACE), {"token": base64.b64encode(self.token.encode()).decode()}),
            ),
        ]
        if self.client_certificate is not None:
            pair = {"tls.crt": self.client_certificate.cert_pem, "tls.key": self.client_certificate.key_pem}
            data = {key: base64.b64encode(value.encode()).decode() for key, value in pair.items()}
            steps.append(
                ("client certificate", Secret(meta(CLIENT_CERT_SECRET, AGENT_NAMESPACE), data, "kubernetes.io/tls"))
            )
        if self.ca_bundle is not None:
            steps.append(("ingester CA", ConfigMap(meta(CA_CONFIGMAP, AGENT_NAMESPACE), {CA_KEY: self.ca_bundle})))
        steps.append(("networkpolicy", self.network_policy()))
        steps.append(("deployment", self.deployment()))
        return steps

    def network_policy(self) -> NetworkPolicy:
        """Default deny for the agent's namespace: no ingress; egress to DNS, the API server and the ingester.

        Destinations are given by port (the API server's address differs per cluster and the
        ingester is outside it): 53 (DNS), 443 and 6443 (the ``kubernetes`` Service and the usual
        API server port behind it) and the ingester's port.
        """
        ports = [NetworkPolicyPort(53, "UDP"), NetworkPolicyPort(53, "TCP")]
        rules = [
            NetworkPolicyEgressRule(tuple(ports)),
            NetworkPolicyEgressRule((NetworkPolicyPort(443), NetworkPolicyPort(6443))),
        ]
        port = ingester_port(self.ingester_address)
        if port is not None and port not in (443, 6443):
            rules.append(NetworkPolicyEgressRule((NetworkPolicyPort(port),)))
        return NetworkPolicy(self._meta(AGENT_NAME, AGENT_NAMESPACE), NetworkPolicySpec(tuple(rules)))

    def _meta(self, name: str, namespace: str = "", labels: dict[str, str] | None = None) -> ObjectMeta:
        return owner_meta(self.owner, name, namespace, labels)

    def env(self) -> tuple[EnvVar, ...]:
        """The container environment, in docs/compatibility.md#agent-deployment order."""
        env = [
            EnvVar("CLUSTER_NAME", self.cluster_name),
            EnvVar("INGESTER_ADDRESS", self.ingester_address),
            EnvVar("COLLECTOR_TOKEN", value_from=EnvVarSource(SecretKeySelector(TOKEN_SECRET, "token"))),
            EnvVar("OPERATOR_SCAN_INTERVAL", str(self.operator_scan_interval)),
        ]
        if self.tls_enabled:
            env += [EnvVar("INGESTER_TLS_ENABLED", "true"), EnvVar("INGESTER_TLS_SERVER_NAME", self.tls_server_name)]
            if self.ca_bundle is not None:
                env.append(EnvVar("INGESTER_TLS_CA", f"{CA_MOUNT}/{CA_KEY}"))
            if self.client_certificate is not None:
                env += [
                    EnvVar("INGESTER_TLS_CLIENT_CERT", f"{CLIENT_CERT_MOUNT}/tls.crt"),
                    EnvVar("INGESTER_TLS_CLIENT_KEY", f"{CLIENT_CERT_MOUNT}/tls.key"),
                ]
        return tuple(env)

    def deployment(self) -> Deployment:
        """The agent Deployment: one replica, one ``collector`` container."""
        mounts: list[VolumeMount] = []
        volumes: list[Volume] = []
        if self.tls_enabled and self.ca_bundle is not None:
            mounts.append(VolumeMount(CA_CONFIGMAP, CA_MOUNT, True))
            volumes.append(Volume(CA_CONFIGMAP, config_map=ConfigMapVolumeSource(CA_CONFIGMAP)))
        if self.tls_enabled and self.client_certificate is not None:
            mounts.append(VolumeMount(CLIENT_CERT_SECRET, CLIENT_CERT_MOUNT, True))
            volumes.append(Volume(CLIENT_CERT_SECRET, secret=SecretVolumeSource(CLIENT_CERT_SECRET)))
        container = Container(
            name="collector",
            image=self.image,
            command=self.command,
            env=self.env(),
            resources=ResourceRequirements(requests=ResourceList("50m", "128Mi"), limits=ResourceList("200m", "512Mi")),
            volume_mounts=tuple(mounts),
        )
        pod = PodSpec(AGENT_NAME, (container,), tuple(volumes))
        return Deployment(
            self._meta(AGENT_NAME, AGENT_NAMESPACE, DEPLOYMENT_LABELS),
            DeploymentSpec(
                selector=LabelSelector({"app.kubernetes.io/name": AGENT_NAME}),
                # A new token (rotation) changes the pod template, so the agent restarts with it.
                template=PodTemplate(
                    ObjectMeta(
                        labels=dict(DEPLOYMENT_LABELS),
                        annotations={TOKEN_ANNOTATION: hashlib.sha256(self.token.encode()).hexdigest()[:16]},
                    ),
                    pod,
                ),
            ),
        )
