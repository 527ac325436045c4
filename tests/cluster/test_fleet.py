"""The typed fleet view the cluster plugin offers (``clusterpulse_fleet``): the one reader of
ClusterConnection objects for the other plugins."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.fleet import fleet_cluster
from clusterpulse_model import AgentStatus, CredentialsRef
from clusterpulse_model.fleet import FleetCluster

from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost


def _cc(name: str, spec: Any, status: Any = None) -> dict[str, Any]:
    return {
        "apiVersion": "clusterpulse.io/v1alpha1",
        "kind": "ClusterConnection",
        "metadata": {"name": name, "namespace": "hub"},
        "spec": spec,
        **({"status": status} if status is not None else {}),
    }


def test_a_clusterconnection_reads_as_a_typed_cluster() -> None:
    obj = _cc(
        "edge",
        {
            "endpoint": "https://edge:6443",
            "collectionMode": "push",
            "credentialsRef": {"name": "edge-creds", "namespace": "vault"},
        },
        {
            "phase": "Connected",
            "agent": {"deployed": True, "version": "1.2.0"},
            "collectorStatus": {"connected": True, "version": "1.2.1", "lastHeartbeat": "2026-01-02T03:04:05Z"},
        },
    )
    assert fleet_cluster(obj) == FleetCluster(
        name="edge",
        namespace="hub",
        endpoint="https://edge:6443",
        credentials=CredentialsRef(name="edge-creds", namespace="vault"),
        collection_mode="push",
        phase="Connected",
        agent=AgentStatus(
            deployed=True, version="1.2.0", connected=True, last_heartbeat=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        ),
    )
    cluster = fleet_cluster(obj)
    assert cluster.connected and cluster.push and cluster.agent.connected


def test_missing_or_malformed_fields_read_as_absent() -> None:
    pulled = fleet_cluster(_cc("plain", {"endpoint": "https://x", "credentialsRef": {"name": "s"}}))
    assert pulled.credentials == CredentialsRef(name="s", namespace="hub")  # the object's namespace
    assert (pulled.collection_mode, pulled.phase, pulled.agent) == ("pull", "", AgentStatus())
    assert not pulled.connected and not pulled.push
    # Only exactly "push" is push; only JSON true is true; a bad time is no time.
    hostile = fleet_cluster(
        _cc(
            "bad",
            {"endpoint": 7, "collectionMode": "Push", "credentialsRef": "x"},
            {
                "phase": ["Connected"],
                "agent": {"deployed": "yes", "version": 1},
                "collectorStatus": {"connected": "true", "lastHeartbeat": "yesterday"},
            },
        )
    )
    assert hostile == FleetCluster(
        name="bad", namespace="hub", endpoint="", credentials=CredentialsRef(name="", namespace="hub")
    )
    assert fleet_cluster({"spec": "nope", "status": 3}).name == ""


def test_the_plugin_offers_the_view_through_its_hook(kube_api: Callable[..., Any]) -> None:
    host = PluginHost(["cluster"])
    assert host.declared_by["clusterpulse_fleet"] == "cluster"
    hook = host.hook("clusterpulse_fleet")
    assert hook is not None
    fleet = hook()
    assert fleet.kind == CLUSTER_CONNECTION
    assert fleet.ref("hub", "edge") == ObjectRef("ClusterConnection", "hub", "edge")

    hub = kube_api()
    kind = CLUSTER_CONNECTION
    hub.add_crd(kind.group, kind.version, kind.kind, kind.plural)
    hub.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in ("hub", "other")])
    hub.create(_cc("east", {"endpoint": "https://east", "credentialsRef": {"name": "east"}}, {"phase": "Connected"}))
    hub.create(_cc("west", {"endpoint": "https://west", "credentialsRef": {"name": "west"}}, {"phase": "Error"}))
    hub.create({**_cc("elsewhere", {"endpoint": "https://x"}), "metadata": {"name": "elsewhere", "namespace": "other"}})
    clusters = fleet.clusters(KubeClient(hub.api_client()), "hub")
    assert [(c.name, c.endpoint, c.connected) for c in sorted(clusters, key=lambda c: c.name)] == [
        ("east", "https://east", True),
        ("west", "https://west", False),
    ]


def test_without_the_cluster_plugin_there_is_no_fleet() -> None:
    host = PluginHost(["metricsource", "alerts"])
    assert host.hook("clusterpulse_fleet") is None
