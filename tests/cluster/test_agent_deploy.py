"""Push mode: the hub installs, upgrades and removes the collector agent (docs/compatibility.md#agent-deployment, #c12).

The managed cluster is a ``kube_api`` emulator reached by the real ``kubernetes`` client; the
hub is another emulator; storage is a real Redis. Writes to the managed cluster are counted
from the emulator's request log.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pytest
import three_node
from cluster_support import CC_API, HUB_NAMESPACE, Harness
from clusterpulse_cluster.agent_deploy.deployer import FINALIZER
from clusterpulse_cluster.agent_deploy.plan import controller_version, image_tag
from clusterpulse_ingester import hookspecs as ingester_hookspecs
from clusterpulse_testing.polling import eventually

from clusterpulse_core import hookimpl
from clusterpulse_core.clock import utcnow
from clusterpulse_core.config import CoreSettings
from clusterpulse_core.hookspecs import HookDeclarer
from clusterpulse_core.runtime.manager import Manager

INGESTER = "ingester.hub.example:9443"
WRITES = ("POST", "PUT", "PATCH", "DELETE")
NS = "clusterpulse-system"
OBJECT_PATHS = {
    "namespace": f"/api/v1/namespaces/{NS}",
    "serviceaccount": f"/api/v1/namespaces/{NS}/serviceaccounts/clusterpulse-collector",
    "clusterrole": "/apis/rbac.authorization.k8s.io/v1/clusterroles/clusterpulse-collector",
    "clusterrolebinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/clusterpulse-collector",
    "secret": f"/api/v1/namespaces/{NS}/secrets/clusterpulse-collector-token",
    "networkpolicy": f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies/clusterpulse-collector",
    "deployment": f"/apis/apps/v1/namespaces/{NS}/deployments/clusterpulse-collector",
}


def managed(kube_api: Callable[..., Any]) -> Any:
    """A managed cluster with three nodes (so the C3 pull fallback also succeeds)."""
    return kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)


def add_push(harness: Harness, name: str, cluster: Any, **spec: Any) -> None:
    harness.add(name, cluster.url, token=three_node.TOKEN, collectionMode="push", ingesterAddress=INGESTER, **spec)


def live(cluster: Any, what: str) -> Any:
    """The object at one of OBJECT_PATHS on the managed cluster (``None`` when absent)."""
    path = OBJECT_PATHS[what]
    api_version = "v1" if path.startswith("/api/") else "/".join(path.split("/")[2:4])
    parts = path.split("/")
    name = parts[-1]
    plural = parts[-2]
    namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts[:-2] else None
    return cluster.get(api_version, plural, name, namespace)


def writes(cluster: Any, path_part: str = "") -> list[tuple[str, str]]:
    return [(method, path) for method, path, _ in cluster.requests if method in WRITES and path_part in path]


#: One reconcile against loopback servers: each of its calls is bounded by ``request_timeout``.
WAIT = CoreSettings().request_timeout


def wait(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    eventually(condition, what, timeout)


def publish_ca(harness: Harness) -> None:
    """The hub ConfigMap with the ingester's CA bundle, as the ingester publishes it (none runs here)."""
    harness.hub.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ingester-ca", "namespace": HUB_NAMESPACE},
            "data": {"service-ca.crt": "-----BEGIN CERTIFICATE-----\nxyz\n"},
        }
    )


def env_of(deployment: Any) -> list[dict[str, Any]]:
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["env"])


# ---------------------------------------------------------------------------------- create


def test_push_reconcile_creates_every_object_with_its_content(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    outcome = harness.reconcile("east")
    assert outcome.ok, outcome.detail

    for what in OBJECT_PATHS:
        obj = live(cluster, what)
        assert obj is not None, f"{what} was not created"
        meta = obj["metadata"]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "clusterpulse", what
        assert meta["labels"]["clusterpulse.io/owner-namespace"] == HUB_NAMESPACE, what
        assert meta["labels"]["clusterpulse.io/owner-name"] == "east", what
        assert meta["annotations"]["clusterpulse.io/owner"] == f"{HUB_NAMESPACE}/east", what
    assert live(cluster, "namespace") is not None

    role = live(cluster, "clusterrole")
    granted = {
        (group, resource) for rule in role["rules"] for group in rule["apiGroups"] for resource in rule["resources"]
    }
    assert {
        ("", "nodes"),
        ("", "pods"),
        ("", "namespaces"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("", "services"),
        ("", "persistentvolumeclaims"),
        ("operators.coreos.com", "clusterserviceversions"),
        ("operators.coreos.com", "subscriptions"),
        ("config.openshift.io", "clusteroperators"),
        ("config.openshift.io", "clusterversions"),
        ("route.openshift.io", "routes"),
    } == granted
    assert all(rule["verbs"] == ["get", "list", "watch"] for rule in role["rules"])
    assert not any("*" in rule["resources"] or "*" in rule["apiGroups"] for rule in role["rules"])
    route = next(rule for rule in role["rules"] if rule["resources"] == ["routes"])
    assert route["resourceNames"] == ["console"]

    binding = live(cluster, "clusterrolebinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "clusterpulse-collector",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "clusterpulse-collector", "namespace": NS}]

    token = live(cluster, "secret")
    assert token["type"] == "Opaque"
    # The token the hub minted for this cluster (kept in its own Secret), never the hub's credential.
    minted = harness.hub.get("v1", "secrets", "clusterpulse-collector-east", HUB_NAMESPACE)
    assert base64.b64decode(token["data"]["token"]) == base64.b64decode(minted["data"]["token"])
    assert base64.b64decode(token["data"]["token"]).decode() != three_node.TOKEN
    # Owned by its ClusterConnection, so Kubernetes deletes it with the cluster.
    owner = harness.hub.get(CC_API, "clusterconnections", "east", HUB_NAMESPACE)
    assert minted["metadata"]["ownerReferences"] == [
        {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": "east", "uid": owner["metadata"]["uid"]}
    ]

    deployment = live(cluster, "deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "clusterpulse-collector"}}
    for labels in (deployment["metadata"]["labels"], deployment["spec"]["template"]["metadata"]["labels"]):
        assert labels["app.kubernetes.io/component"] == "collector"
        assert labels["app.kubernetes.io/part-of"] == "clusterpulse"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "clusterpulse-collector"
    (container,) = pod["containers"]
    tag = image_tag("", controller_version())
    assert container["name"] == "collector"
    assert container["image"] == f"quay.io/clusterpulse/clusterpulse:{tag}"
    assert container["command"] == ["clusterpulse", "agent"]
    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"cpu": "200m", "memory": "512Mi"},
    }
    assert env_of(deployment) == [
        {"name": "CLUSTER_NAME", "value": "east"},
        {"name": "INGESTER_ADDRESS", "value": INGESTER},
        {
            "name": "COLLECTOR_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "clusterpulse-collector-token", "key": "token"}},
        },
        {"name": "OPERATOR_SCAN_INTERVAL", "value": "300"},
    ]

    # The restricted Pod Security level (docs/security.md#the-agent-pod), on the namespace and the pod.
    labels = live(cluster, "namespace")["metadata"]["labels"]
    assert {key: labels[key] for key in labels if key.startswith("pod-security.kubernetes.io/")} == {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "runAsGroup": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    policy = live(cluster, "networkpolicy")
    assert policy["spec"]["podSelector"] == {"matchLabels": {}}
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in policy["spec"] or policy["spec"]["ingress"] == []
    egress = [(p["port"], p["protocol"]) for rule in policy["spec"]["egress"] for p in rule["ports"]]
    assert not any("to" in rule for rule in policy["spec"]["egress"])
    assert sorted(egress) == sorted(
        [(53, "UDP"), (53, "TCP"), (443, "TCP"), (6443, "TCP"), (int(INGESTER.rpartition(":")[2]), "TCP")]
    )

    cr = harness.cr("east")
    assert FINALIZER in cr["metadata"]["finalizers"]
    assert cr["status"]["agent"] == {"deployed": True, "version": tag, "connected": False}
    stored = harness.json("cluster:east:status")
    assert stored["agent"] == {"deployed": True, "version": tag, "connected": False}
    # C3: the agent is not connected yet, so the cluster is collected by pull meanwhile.
    assert cr["status"]["phase"] == "Connected"


def test_tls_without_system_ca_copies_the_ca_and_mounts_it(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    harness = make_harness(env={"INGESTER_TLS_ENABLED": "true"})
    publish_ca(harness)
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    assert harness.reconcile("east").ok
    ca = cluster.get("v1", "configmaps", "ingester-ca", NS)
    assert ca["data"] == {"service-ca.crt": "-----BEGIN CERTIFICATE-----\nxyz\n"}
    deployment = live(cluster, "deployment")
    assert env_of(deployment)[4:] == [
        {"name": "INGESTER_TLS_ENABLED", "value": "true"},
        {"name": "INGESTER_TLS_SERVER_NAME", "value": f"clusterpulse-ingester.{HUB_NAMESPACE}.svc"},
        {"name": "INGESTER_TLS_CA", "value": "/etc/ingester-ca/service-ca.crt"},
    ]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "ingester-ca", "mountPath": "/etc/ingester-ca", "readOnly": True}
    ]
    assert pod["volumes"] == [{"name": "ingester-ca", "configMap": {"name": "ingester-ca"}}]


def test_plaintext_push_is_a_visible_opt_out(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    """INGESTER_TLS_ENABLED=false: every push ClusterConnection says so (condition and Warning Event);
    a pull one does not, and with TLS (the default) none does."""
    harness = make_harness(env={"INGESTER_TLS_ENABLED": "false"})
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    harness.add("west", cluster.url, token=three_node.TOKEN)
    assert harness.reconcile("east").ok and harness.reconcile("west").ok

    def insecure(name: str) -> list[dict[str, Any]]:
        return [c for c in harness.cr(name)["status"].get("conditions") or () if c["type"] == "InsecureTransport"]

    (condition,) = insecure("east")
    assert condition["status"] == "True" and condition["reason"] == "PlaintextIngester"
    assert "INGESTER_TLS_ENABLED=false" in condition["message"] and "plaintext" in condition["message"]
    assert insecure("west") == []
    events = harness.hub.list("v1", "events", HUB_NAMESPACE)
    assert [e["reason"] for e in events if e["involvedObject"]["name"] == "east"].count("InsecureTransport") == 1
    assert "INGESTER_TLS_ENABLED" not in str(env_of(live(cluster, "deployment")))

    tls = make_harness(env={"INGESTER_TLS_ENABLED": "true"})
    publish_ca(tls)
    assert tls.reconcile("east").ok
    assert insecure("east") == []


def test_a_missing_ca_configmap_defers_only_the_agent_and_the_cluster_is_pulled(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    """TLS on, the ingester has not published its CA bundle yet: the agent waits (the status says why), the
    cluster is collected by pull meanwhile, and the agent is deployed once the bundle is there."""
    harness = make_harness(env={"INGESTER_TLS_ENABLED": "true"})
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    outcome = harness.reconcile("east")
    assert outcome.ok, outcome.detail
    status = harness.cr("east")["status"]
    assert status["phase"] == "Connected" and status["nodes"] == 3
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    why = f"agent deployment deferred: the ingester CA ConfigMap {HUB_NAMESPACE}/ingester-ca does not exist"
    assert why in status["message"] and why in ready["message"]
    assert status["agent"] == {"deployed": False, "version": "", "connected": False}
    assert harness.json("cluster:east:metrics")["nodes"] == 3, "the pull fallback stored nothing"
    assert live(cluster, "deployment") is None and live(cluster, "secret") is None

    publish_ca(harness)
    assert harness.reconcile("east").ok
    assert live(cluster, "deployment") is not None
    assert "deferred" not in harness.cr("east")["status"]["message"]
    assert harness.cr("east")["status"]["agent"]["deployed"] is True


def test_a_ca_configmap_that_cannot_be_read_is_an_error_status_naming_it(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    harness = make_harness(env={"INGESTER_TLS_ENABLED": "true"})
    harness.hub.fail(r"/configmaps/ingester-ca", status=403)
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    outcome = harness.reconcile("east")
    assert not outcome.ok
    status = harness.cr("east")["status"]
    assert status["phase"] == "Error"
    assert status["message"].startswith(f"ingester CA: failed to get CA ConfigMap {HUB_NAMESPACE}/ingester-ca: ")
    assert status["agent"] == {"deployed": False, "version": "", "connected": False}


def test_a_refused_write_lands_in_the_status_with_the_object_and_the_reason(
    harness: Harness, kube_api: Callable[..., Any]
) -> None:
    cluster = managed(kube_api)
    cluster.fail(r"/clusterroles", status=403, method="POST")
    add_push(harness, "east", cluster)
    outcome = harness.reconcile("east")
    assert not outcome.ok
    status = harness.cr("east")["status"]
    assert status["phase"] == "Error"
    assert status["health"] == "unhealthy"
    assert status["message"].startswith("clusterrole: ClusterRole clusterpulse-collector: ")
    assert harness.json("cluster:east:status")["message"] == status["message"]
    # Created before the failing step, in the deployment order (docs/compatibility.md#agent-deployment);
    # nothing after it.
    assert live(cluster, "serviceaccount") is not None
    assert live(cluster, "deployment") is None
    cluster.clear_failures()
    assert harness.reconcile("east").ok
    assert harness.cr("east")["status"]["phase"] == "Connected"
    assert live(cluster, "deployment") is not None


# ---------------------------------------------------------------------------------- C12


def test_ten_unchanged_reconciles_write_nothing(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    assert harness.reconcile("east").ok
    # What a real API server adds: defaulted container fields, strategy, extra labels by others.
    deployment = live(cluster, "deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container.update(
        imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log", terminationMessagePolicy="File"
    )
    deployment["spec"]["template"]["spec"].update(
        restartPolicy="Always", dnsPolicy="ClusterFirst", schedulerName="default-scheduler"
    )
    deployment["spec"].update(strategy={"type": "RollingUpdate"}, revisionHistoryLimit=10)
    deployment["metadata"]["labels"]["team"] = "platform"
    cluster.update(deployment)
    cluster.clear_requests()

    for _ in range(10):
        assert harness.reconcile("east").ok
    assert writes(cluster) == []
    assert live(cluster, "deployment")["metadata"]["labels"]["team"] == "platform"


def test_a_version_change_updates_the_deployment_exactly_once(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    assert harness.reconcile("east").ok
    cluster.clear_requests()

    cr = harness.cr("east")
    cr["spec"]["collectorVersion"] = "1.4.2"
    harness.hub.update(cr)
    for _ in range(3):
        assert harness.reconcile("east").ok
    assert writes(cluster) == [("PATCH", OBJECT_PATHS["deployment"])]
    (container,) = live(cluster, "deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "quay.io/clusterpulse/clusterpulse:1.4.2"
    assert harness.cr("east")["status"]["agent"]["version"] == "1.4.2"


def test_image_tag_rule() -> None:
    assert image_tag("2.0.1", "0.1.0") == "2.0.1"
    assert image_tag("", "0.1.0") == "0.1.0"
    assert image_tag("", "") == "latest"
    assert image_tag("", "dev") == "latest"
    assert image_tag("", "0.2.0.dev3") == "latest"
    assert image_tag("", "0.1.0+g1234") == "latest"


class ReadsWidgets:
    """A plugin whose definitions read a third-party resource type inside the agent."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.types: list[tuple[str, str]] = []

    @hookimpl
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        """Declare the ingester's hooks: this stands in for it (not loaded here)."""
        pluginmanager.add_hookspecs(ingester_hookspecs)

    @hookimpl
    def clusterpulse_agent_read_types(self) -> Sequence[tuple[str, str]]:
        return list(self.types)


def test_a_new_resource_type_updates_the_role_once(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    widgets = ReadsWidgets()
    harness = make_harness(extra={"widgets": widgets})
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    assert harness.reconcile("east").ok
    cluster.clear_requests()

    widgets.types = [("example.com", "widgets"), ("apps", "replicasets")]
    assert harness.reconcile("east").ok
    assert harness.reconcile("east").ok
    assert writes(cluster) == [("PATCH", OBJECT_PATHS["clusterrole"])]
    rules = live(cluster, "clusterrole")["rules"]
    assert {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]} in rules
    apps = next(rule for rule in rules if rule["apiGroups"] == ["apps"])
    assert apps["resources"] == ["daemonsets", "deployments", "replicasets", "statefulsets"]


# ---------------------------------------------------------------------------------- removal


def test_switching_to_pull_removes_everything_and_the_finalizer(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    assert harness.reconcile("east").ok
    cr = harness.cr("east")
    cr["spec"]["collectionMode"] = "pull"
    harness.hub.update(cr)
    assert harness.reconcile("east").ok
    assert all(live(cluster, what) is None for what in OBJECT_PATHS)
    cr = harness.cr("east")
    assert FINALIZER not in (cr["metadata"].get("finalizers") or [])
    assert "agent" not in cr["status"]
    assert "agent" not in harness.json("cluster:east:status")


def _manager(harness: Harness) -> Manager:
    config = harness.runtime.config
    harness.runtime.config = attrs.evolve(
        config, core=attrs.evolve(config.core, metrics_bind_address="0", health_probe_bind_address="0")
    )
    harness.plugin.clock = utcnow
    return Manager(harness.runtime, identity="test")


def test_delete_removes_every_object_then_the_finalizer(harness: Harness, kube_api: Callable[..., Any]) -> None:
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    manager = _manager(harness)
    manager.start()
    try:
        wait(lambda: live(cluster, "deployment") is not None, "the agent Deployment")
        wait(lambda: FINALIZER in (harness.cr("east")["metadata"].get("finalizers") or []), "the finalizer")
        harness.hub.delete(CC_API, "clusterconnections", "east", HUB_NAMESPACE)
        wait(
            lambda: harness.hub.get(CC_API, "clusterconnections", "east", HUB_NAMESPACE) is None,
            "the ClusterConnection to go",
        )
        assert [what for what in OBJECT_PATHS if live(cluster, what) is not None] == []
        wait(lambda: harness.redis.get("cluster:east:status") is None, "the stored data to go")
    finally:
        manager.stop()


def test_an_unreachable_cluster_holds_deletion_only_until_the_timeout(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    # The first removal attempt must come within this of the deletion, or the deployer gives up at once.
    removal_timeout = 10.0
    harness = make_harness(settings={"agent_removal_timeout": removal_timeout})
    cluster = managed(kube_api)
    add_push(harness, "east", cluster)
    manager = _manager(harness)
    manager.start()
    try:
        wait(lambda: FINALIZER in (harness.cr("east")["metadata"].get("finalizers") or []), "the finalizer")
        wait(
            lambda: (harness.cr("east").get("status") or {}).get("agent", {}).get("deployed") is True,
            "the agent to be deployed",
        )
        # No reconcile in flight when the cluster stops (one would hang on it until its deadline).
        queue = manager.controllers["ClusterConnection"].queue
        wait(lambda: not queue.in_flight and not queue.due(), "the reconciles to finish")
        cluster.stop()
        started = time.monotonic()
        harness.hub.delete(CC_API, "clusterconnections", "east", HUB_NAMESPACE)
        # The first removal attempt after the deletion has failed (and is retried): the deletion waits.
        wait(
            lambda: any("removing the agent failed" in record.getMessage() for record in caplog.records),
            "the first removal attempt",
        )
        assert harness.hub.get(CC_API, "clusterconnections", "east", HUB_NAMESPACE) is not None, (
            "deletion must wait for the removal"
        )
        wait(
            lambda: harness.hub.get(CC_API, "clusterconnections", "east", HUB_NAMESPACE) is None,
            "the ClusterConnection to go after the timeout",
        )
        # The timeout counts from metadata.deletionTimestamp, which has whole-second precision.
        assert time.monotonic() - started >= removal_timeout - 1.0
        events = harness.hub.list("v1", "events", HUB_NAMESPACE)
        (event,) = [e for e in events if e["involvedObject"]["name"] == "east" and e["reason"] == "AgentLeftBehind"]
        assert event["type"] == "Warning"
        assert event["reason"] == "AgentLeftBehind"
        assert event["involvedObject"]["kind"] == "ClusterConnection"
        for left in (
            "Deployment clusterpulse-system/clusterpulse-collector",
            "ClusterRole clusterpulse-collector",
            "ClusterRoleBinding clusterpulse-collector",
            "Namespace clusterpulse-system",
        ):
            assert left in event["message"]
    finally:
        manager.stop()


def test_the_sweep_removes_objects_whose_owner_went_while_the_controller_was_stopped(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    harness = make_harness()
    cluster = managed(kube_api)
    add_push(harness, "old", cluster)
    assert harness.reconcile("old").ok
    assert live(cluster, "deployment") is not None
    # The controller is down: someone drops the finalizer by hand and deletes the ClusterConnection,
    # then registers the same cluster again in pull mode.
    cr = harness.cr("old")
    cr["metadata"]["finalizers"] = []
    harness.hub.update(cr)
    harness.hub.delete(CC_API, "clusterconnections", "old", HUB_NAMESPACE)
    assert harness.hub.get(CC_API, "clusterconnections", "old", HUB_NAMESPACE) is None
    harness.add("again", cluster.url, token=three_node.TOKEN)

    fresh = make_harness()
    manager = _manager(fresh)
    manager.start()
    try:
        wait(lambda: all(live(cluster, what) is None for what in OBJECT_PATHS), "the sweep")
    finally:
        manager.stop()
    assert cluster.list("v1", "nodes"), "only agent objects are removed"


def test_a_namespace_that_was_there_before_is_used_but_never_labelled_or_removed(
    harness: Harness, kube_api: Callable[..., Any]
) -> None:
    cluster = managed(kube_api)
    cluster.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": {"owner": "platform-team"}}}
    )
    add_push(harness, "east", cluster)
    assert harness.reconcile("east").ok
    assert live(cluster, "namespace")["metadata"]["labels"] == {"owner": "platform-team"}
    assert live(cluster, "deployment") is not None
    harness.clock.advance(1)
    cluster.clear_requests()
    assert harness.reconcile("east").ok
    assert writes(cluster) == []

    cr = harness.cr("east")
    cr["spec"]["collectionMode"] = "pull"
    harness.hub.update(cr)
    assert harness.reconcile("east").ok
    assert live(cluster, "deployment") is None
    assert live(cluster, "clusterrole") is None
    assert live(cluster, "namespace") is not None, "a Namespace the hub did not create stays"


def test_owner_annotations_from_a_managed_cluster_are_validated() -> None:
    from clusterpulse_cluster.agent_deploy.objects import Owner

    assert Owner.parse("clusterpulse/east") == Owner("clusterpulse", "east")
    assert Owner.parse("clusterpulse/east.lab-1") == Owner("clusterpulse", "east.lab-1")
    for bad in ("", "east", "/east", "clusterpulse/", "x/../../secrets/s", "Upper/east", "a/b/c", "ns/" + "x" * 254):
        assert Owner.parse(bad) is None, bad
