"""Clusters a push agent serves are left to the agent: the hub's MetricSource reconcile skips them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.fleet import FLEET
from clusterpulse_metricsource.fleet import connected_clusters

from clusterpulse_core.kube.client import KubeClient


def test_connected_clusters_skip_those_with_a_connected_agent(kube_api: Callable[..., Any]) -> None:
    hub = kube_api()
    kind = CLUSTER_CONNECTION
    hub.add_crd(kind.group, kind.version, kind.kind, kind.plural)
    hub.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cp"}}])
    statuses = {
        "pulled": {"phase": "Connected"},
        "pushed": {"phase": "Connected", "collectorStatus": {"connected": True, "version": "1"}},
        "fell-back": {"phase": "Connected", "collectorStatus": {"connected": False}},
        "broken": {"phase": "Error"},
    }
    for name, status in statuses.items():
        hub.create(
            {
                "apiVersion": "clusterpulse.io/v1alpha1",
                "kind": "ClusterConnection",
                "metadata": {"name": name, "namespace": "cp"},
                "spec": {"endpoint": "https://x", "credentialsRef": {"name": "s"}},
                "status": status,
            }
        )
    names = sorted(ref.name for ref in connected_clusters(FLEET, KubeClient(hub.api_client()), "cp"))
    assert names == ["fell-back", "pulled"]
