"""The RBAC `clusterpulse rbac` prints covers every API call the real controller makes, and no more.

The real manager and plugins, the ingester included, run against the emulated demo fleet (hub +
three managed clusters, the push-mode one streamed by a real ``clusterpulse agent``); every request
the emulators logged is mapped to its RBAC verb and resource and checked against the
generated rules: the hub Role for the hub, the read-only ClusterRole for the managed clusters.
"""

from __future__ import annotations

import base64
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
from clusterpulse_demo.fleet import running_fleet
from clusterpulse_demo.run import (
    CYCLE_TIMEOUT,
    _push_clusters,
    _run_cycles,
    _start_agent,
    _stop_agent,
    _wait_for_deployment,
)
from clusterpulse_testing.kube_api_util import ApiError
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import free_port, redis_process

from clusterpulse_core import rbac
from clusterpulse_core.config import CoreSettings, RawConfig, finish_config
from clusterpulse_core.kinds import ApiAccess, ResourceKind
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime
from clusterpulse_core.runtime.leader import LEASE_NAME
from clusterpulse_core.runtime.manager import Manager

PLUGINS = ("redis", "cluster", "registry", "metricsource", "policy", "alerts", "ingester")
#: What the default ``system:discovery`` ClusterRole grants every authenticated user (a Role cannot
#: grant non-resource URLs, so the hub relies on it for discovery).
SYSTEM_DISCOVERY = {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/version"], "verbs": ["get"]}
CC_API = "clusterpulse.io/v1alpha1"
AGENT_NS = "clusterpulse-system"
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@attrs.frozen
class Call:
    """One logged API request in RBAC terms (``resource`` empty for a non-resource URL)."""

    verb: str
    group: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    url: str = ""


def to_call(method: str, path: str, query: dict[str, str]) -> Call:
    """Map a request to what the API server's authorizer checks."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        rest = []
    if not rest:
        return Call("get" if method == "GET" else method.lower(), url=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource += "/" + rest[2]
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch") in ("true", "1") else "list")
    else:
        verb = _VERBS[method]
    return Call(verb, group, resource, namespace, name)


def allowed(call: Call, rules: list[dict[str, Any]]) -> bool:
    """Whether one of ``rules`` grants ``call`` (RBAC's matching, without wildcards we never emit)."""
    for rule in rules:
        if call.verb not in rule["verbs"]:
            continue
        if not call.resource:
            if any(
                call.url == u or (u.endswith("*") and call.url.startswith(u[:-1]))
                for u in rule.get("nonResourceURLs", ())
            ):
                return True
            continue
        if call.group in rule.get("apiGroups", ()) and call.resource in rule.get("resources", ()):
            names = rule.get("resourceNames")
            if not names or call.name in names:
                return True
    return False


def _role_rules(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return next(d["rules"] for d in docs if d["kind"] == kind)


def agent_connected(manager: Manager, cluster: str) -> bool:
    """Whether the cluster's agent is registered with the manager's ingester."""
    hook = manager.runtime.plugins.hook("clusterpulse_agent_connection")  # declared by the ingester
    return hook is not None and hook(cluster=cluster) is not None


@pytest.fixture(scope="module")
def fleet_calls(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[ResourceKind], CoreSettings, list[Call], list[Call], list[Call]]:
    """Two reconcile cycles of the demo fleet with leader election.

    Returns (kinds, settings, hub calls, pull-mode managed calls, push-mode managed calls).
    """
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: sudo apt-get install -y redis-server")
    host = PluginHost(PLUGINS)
    kinds = [kind for _owner, kind in host.kinds.values()]
    server = redis_process(binary)
    server.start()
    try:
        with running_fleet(kinds) as fleet, tempfile.TemporaryDirectory() as tmp:
            kubeconfig = fleet.hub.write_kubeconfig(Path(tmp) / "hub.kubeconfig")
            core = CoreSettings(
                plugins=PLUGINS,
                namespace=fleet.namespace,
                kubeconfig=str(kubeconfig),
                metrics_bind_address="0",
                health_probe_bind_address="0",
                leader_elect=True,
            )
            ingester_port = free_port()
            # TLS by default: the ingester makes its CA and certificate and publishes the CA for the
            # agents the hub deploys (the agents this test starts verify the ingester with it).
            raw = RawConfig(
                core=core,
                plugin_sections={
                    "redis": {"url": f"redis://127.0.0.1:{server.port}/0"},
                    # mTLS: the hub also issues each agent a client certificate (a Secret on its cluster).
                    "ingester": {
                        "bind_address": "127.0.0.1",
                        "port": ingester_port,
                        "tls_renew_check_interval": 0.5,
                        "require_client_certificates": True,
                    },
                },
                source="test",
            )
            config = finish_config(raw, host.settings_classes(), env={})
            host.configure(config)
            for cluster in _push_clusters(fleet, host):
                # As `clusterpulse rbac --managed --push` creates it: the hub uses it, never removes it.
                cluster.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NS}})
            manager = Manager(build_runtime(config, host), identity="rbac-test")
            agents: list[subprocess.Popen[bytes]] = []
            manager.start()
            try:
                for cluster in _push_clusters(fleet, host):
                    deployed = _wait_for_deployment(cluster)
                    agents.append(_start_agent(cluster, ingester_port, Path(tmp), deployed))
                    # Registering makes the ingester check the agent's token against the hub's Secret.
                    eventually(
                        functools.partial(agent_connected, manager, cluster.name),
                        f"the collector agent of {cluster.name}",
                        CYCLE_TIMEOUT,
                    )
                _run_cycles(manager, fleet, 2, echo=lambda _line: None)
                # A new ingester CA (its Secret deleted): the certificate Secret and the published
                # bundle are rewritten by the next renewal check.
                bundle = _published_ca(fleet)
                fleet.hub.delete("v1", "secrets", "clusterpulse-ingester-ca", fleet.namespace)
                eventually(lambda: _published_ca(fleet) not in ("", bundle), "the new CA bundle", CYCLE_TIMEOUT)
            finally:
                for agent in agents:
                    _stop_agent(agent)
                manager.stop()
            hub = [to_call(*request) for request in fleet.hub.requests]
            push = {
                obj["metadata"]["name"]
                for obj in fleet.hub.list(CC_API, "clusterconnections", fleet.namespace)
                if (obj.get("spec") or {}).get("collectionMode") == "push"
            }
            managed = [
                to_call(*request)
                for cluster in fleet.clusters
                if cluster.name not in push
                for request in cluster.api.requests
            ]
            pushed = [
                to_call(*request)
                for cluster in fleet.clusters
                if cluster.name in push
                for request in cluster.api.requests
            ]
    finally:
        server.cleanup()
    assert pushed, "the demo fleet has a push-mode cluster (the hub installs its agent)"
    assert agents, "the push-mode cluster's agent connected to the ingester"
    return kinds, config.core, hub, managed, pushed


def _published_ca(fleet: Any) -> str:
    found = fleet.hub.get("v1", "configmaps", "ingester-ca", fleet.namespace)
    return str(((found or {}).get("data") or {}).get("service-ca.crt") or "")


def test_the_hub_role_allows_every_call_and_every_rule_is_used(fleet_calls: Any) -> None:
    kinds, settings, hub, _managed, _pushed = fleet_calls
    rules = _role_rules(rbac.hub_manifests(kinds, settings), "Role")
    denied = {c for c in hub if not allowed(c, [*rules, SYSTEM_DISCOVERY])}
    assert not denied, f"the hub Role lacks: {sorted(map(str, denied))}"
    assert all(c.namespace == settings.namespace for c in hub if c.resource), "a hub call left the namespace"
    assert Call("create", "coordination.k8s.io", "leases", settings.namespace) in hub
    assert Call("get", "coordination.k8s.io", "leases", settings.namespace, LEASE_NAME) in hub
    for rule in rules:
        assert any(allowed(c, [rule]) for c in hub), f"rule never used by the controller: {rule}"


def test_the_managed_cluster_role_allows_every_call_and_is_read_only(fleet_calls: Any) -> None:
    kinds, _settings, _hub, managed, _pushed = fleet_calls
    rules = _role_rules(rbac.managed_manifests(kinds), "ClusterRole")
    denied = {c for c in managed if not allowed(c, rules)}
    assert not denied, f"the managed-cluster ClusterRole lacks: {sorted(map(str, denied))}"
    assert {c.verb for c in managed} <= {"get", "list", "watch"}
    used = {(c.group, c.resource) for c in managed if c.resource}
    for rule in rules:
        for group in rule.get("apiGroups", ()):
            for resource in rule["resources"]:
                assert (group, resource) in used, f"{group}/{resource} granted but never read by the demo fleet"


def test_the_push_cluster_role_allows_installing_the_agent(fleet_calls: Any) -> None:
    """A push-mode cluster: the hub installs the agent there (docs/agent-deploy.md), with --push rules:
    every call allowed, every push rule used, writes confined to the agent's namespace and names."""
    kinds, _settings, _hub, _managed, pushed = fleet_calls
    docs = rbac.managed_manifests(kinds, push=True)
    cluster_rules = _role_rules(docs, "ClusterRole")
    role = next(d for d in docs if d["kind"] == "Role")
    where = role["metadata"]["namespace"]
    assert where == AGENT_NS and {"kind": "Namespace", "name": AGENT_NS} in [
        {"kind": d["kind"], "name": d["metadata"]["name"]} for d in docs
    ]

    def granted(call: Call) -> bool:
        return allowed(call, cluster_rules) or (call.namespace == where and allowed(call, role["rules"]))

    denied = {c for c in pushed if not granted(c)}
    assert not denied, f"the push-mode roles lack: {sorted(map(str, denied))}"
    assert Call("create", "apps", "deployments", AGENT_NS) in pushed
    # mTLS: the agent's client certificate Secret is read by name (the hub reuses what the agent has).
    assert Call("get", "", "secrets", AGENT_NS, "clusterpulse-collector-tls") in pushed
    assert Call("create", "rbac.authorization.k8s.io", "clusterroles") in pushed
    read_only = _role_rules(rbac.managed_manifests(kinds), "ClusterRole")
    assert any(not allowed(c, read_only) for c in pushed), "installing the agent needs more than reading"
    push_only = [r for r in cluster_rules if r not in read_only]
    for rule in [*push_only, *role["rules"]]:
        assert any(allowed(c, [rule]) for c in pushed), f"push rule never used installing the agent: {rule}"
    # No Secret access outside the agent's namespace, no wildcard, names wherever the verb allows one.
    for rule in cluster_rules:
        assert "secrets" not in rule.get("resources", ()) and "*" not in rule.get("verbs", ())
        assert "*" not in rule.get("resources", ()) and "*" not in rule.get("apiGroups", ())
    for rule in [*push_only, *role["rules"]]:
        if set(rule["verbs"]) & {"patch", "update", "delete"}:
            assert rule.get("resourceNames"), f"a push rule without resourceNames: {rule}"


def test_without_a_rule_the_call_is_denied(fleet_calls: Any) -> None:
    kinds, settings, hub, _managed, _pushed = fleet_calls
    rules = [r for r in _role_rules(rbac.hub_manifests(kinds, settings), "Role") if "secrets" not in r["resources"]]
    assert any(c.resource == "secrets" and not allowed(c, rules) for c in hub)


def test_rules_merge_verbs_and_resources_deterministically() -> None:
    merged = rbac.rules(
        [
            ApiAccess("", ("pods",), ("list",)),
            ApiAccess("", ("nodes", "pods"), ("list",)),
            ApiAccess("", ("pods",), ("get",)),
            ApiAccess("x.io", ("things",), ("get",), resource_names=("one",)),
            ApiAccess(non_resource_urls=("/version",)),
        ]
    )
    assert merged == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
        {"apiGroups": ["x.io"], "resources": ["things"], "resourceNames": ["one"], "verbs": ["get"]},
        {"nonResourceURLs": ["/version"], "verbs": ["get"]},
    ]


def test_managed_access_must_be_read_only_and_read_flags_are_checked() -> None:
    writer = ResourceKind("x.io", "v1", "X", "xs", schema={}, managed_access=(ApiAccess("", ("pods",), ("delete",)),))
    with pytest.raises(ValueError, match="read-only"):
        rbac.managed_manifests([writer])
    assert rbac.parse_read("apps/statefulsets") == ApiAccess("apps", ("statefulsets",), ("get", "list"))
    assert rbac.parse_read("pods") == ApiAccess("", ("pods",), ("get", "list"))
    with pytest.raises(ValueError, match="GROUP/RESOURCE"):
        rbac.parse_read("a/b/c")


def test_sharding_grants_the_member_leases() -> None:
    plain = rbac.core_hub_access(CoreSettings(leader_elect=True))
    sharded = rbac.core_hub_access(CoreSettings(sharding=True))
    member_leases = ApiAccess("coordination.k8s.io", ("leases",), ("get", "list", "update", "delete"))
    assert member_leases not in plain
    assert member_leases in sharded
    assert ApiAccess("coordination.k8s.io", ("leases",), ("get", "update"), resource_names=(LEASE_NAME,)) in sharded


def test_removing_push_mode_or_the_cluster_removes_the_agent_within_the_push_role(
    kube_api: Any, redis_url: str, tmp_path: Path
) -> None:
    """Switching a ClusterConnection to pull, then deleting it, removes what the hub installed (the agent's
    ClusterRole and ClusterRoleBinding included) with calls the ``--push`` roles allow (docs/agent-deploy.md)."""
    from clusterpulse_cluster.crd import CLUSTER_CONNECTION

    from clusterpulse_core.kube.client import KubeClient

    host = PluginHost(("redis", "cluster"))
    kinds = [kind for _owner, kind in host.kinds.values()]
    docs = rbac.managed_manifests(kinds, push=True)
    cluster_rules, role = _role_rules(docs, "ClusterRole"), next(d for d in docs if d["kind"] == "Role")

    def granted(call: Call) -> bool:
        return allowed(call, cluster_rules) or (call.namespace == AGENT_NS and allowed(call, role["rules"]))

    namespace, token = "clusterpulse", "managed-token"
    hub = kube_api()
    hub.add_crd(
        CLUSTER_CONNECTION.group, CLUSTER_CONNECTION.version, CLUSTER_CONNECTION.kind, CLUSTER_CONNECTION.plural
    )
    lab = kube_api(require_token=token)
    hub.seed(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "lab-token", "namespace": namespace},
                "data": {
                    "token": base64.b64encode(token.encode()).decode(),
                    "ca.crt": base64.b64encode(lab.ca_pem.encode()).decode(),
                },
            },
        ]
    )
    lab.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NS}})  # as --push creates it
    core = CoreSettings(
        plugins=("redis", "cluster"), namespace=namespace, metrics_bind_address="0", health_probe_bind_address="0"
    )
    raw = RawConfig(
        core=core,
        plugin_sections={"redis": {"url": redis_url}, "cluster": {"ingester_tls_enabled": False}},
        source="test",
    )
    config = finish_config(raw, host.settings_classes(), env={})
    host.configure(config)
    manager = Manager(build_runtime(config, host, hub=KubeClient(hub.api_client())), identity="rbac-removal")
    manager.start()
    role_path = ("rbac.authorization.k8s.io/v1", "clusterroles", "clusterpulse-collector", None)
    binding_path = ("rbac.authorization.k8s.io/v1", "clusterrolebindings", "clusterpulse-collector", None)
    try:

        def install() -> None:
            eventually(
                lambda: lab.get("apps/v1", "deployments", "clusterpulse-collector", AGENT_NS),
                "the hub to install the agent",
                CYCLE_TIMEOUT,
            )
            assert lab.get(*role_path) is not None and lab.get(*binding_path) is not None

        def removed(what: str) -> list[Call]:
            eventually(
                lambda: lab.get(*role_path) is None and lab.get(*binding_path) is None,
                f"{what} to remove the agent's ClusterRole and ClusterRoleBinding",
                CYCLE_TIMEOUT,
            )
            eventually(
                lambda: lab.get("apps/v1", "deployments", "clusterpulse-collector", AGENT_NS) is None,
                f"{what} to remove the Deployment",
                CYCLE_TIMEOUT,
            )
            calls = [to_call(*request) for request in lab.requests]
            denied = {c for c in calls if not granted(c)}
            assert not denied, f"{what}: the push-mode roles lack {sorted(map(str, denied))}"
            for resource in ("clusterroles", "clusterrolebindings"):
                assert Call("delete", "rbac.authorization.k8s.io", resource, "", "clusterpulse-collector") in calls
            return calls

        def set_mode(mode: str) -> None:
            """Switch the collection mode; read again when the manager's status patch came first (409)."""

            def switched() -> bool:
                found = hub.get(CC_API, "clusterconnections", "lab", namespace)
                found["spec"]["collectionMode"] = mode
                try:
                    hub.update(found)
                except ApiError as exc:
                    if exc.code != 409:
                        raise
                    return False
                return True

            eventually(switched, f"the switch to {mode}", CYCLE_TIMEOUT)

        spec = {
            "endpoint": lab.url,
            "credentialsRef": {"name": "lab-token"},
            "collectionMode": "push",
            "ingesterAddress": "ingester.example:9443",
        }
        hub.create(
            {
                "apiVersion": CC_API,
                "kind": "ClusterConnection",
                "metadata": {"name": "lab", "namespace": namespace},
                "spec": spec,
            }
        )
        install()
        lab.clear_requests()
        set_mode("pull")
        removed("switching to pull")

        set_mode("push")
        install()
        lab.clear_requests()
        hub.delete(CC_API, "clusterconnections", "lab", namespace)
        removed("deleting the ClusterConnection")
        eventually(
            lambda: hub.get(CC_API, "clusterconnections", "lab", namespace) is None,
            "the finalizer to go",
            CYCLE_TIMEOUT,
        )
    finally:
        manager.stop()
