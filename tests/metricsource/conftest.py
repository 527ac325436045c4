"""Fixtures for the MetricSource tests: a hub and two managed clusters on the Kubernetes API emulator.

Stored pieces are captured by a test-local storage backend plugin (a real plugin registered
through the store hook), so the tests check exactly what every backend receives.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from clusterpulse_cluster.plugin import ClusterPlugin
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_metricsource.plugin import MetricSourcePlugin
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.context import Runtime
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import Outcome, build_runtime, reconcile_object

NAMESPACE = "clusterpulse"
CUSTOM_GROUP = "botany.example.io"
CUSTOM_API_VERSION = f"{CUSTOM_GROUP}/v1"


def _secret(name: str, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {
            "token": base64.b64encode(token.encode()).decode(),
            "ca.crt": base64.b64encode(loopback_ca().ca_pem.encode()).decode(),
        },
    }


def _connection(name: str, endpoint: str, phase: str) -> dict[str, Any]:
    return {
        "apiVersion": "clusterpulse.io/v1alpha1",
        "kind": "ClusterConnection",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"endpoint": endpoint, "credentialsRef": {"name": f"{name}-token"}},
        "status": {"phase": phase},
    }


def cactus(
    namespace: str, name: str, size: str, arms: int, phase: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """One object of the custom type collected in these tests (plural ``cacti``)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": CUSTOM_API_VERSION,
        "kind": "Cactus",
        "metadata": meta,
        "spec": {"size": size, "arms": arms, "spines": ["a"] * arms},
        "status": {"phase": phase},
    }


@attrs.define
class Fleet:
    """A hub with ClusterConnections to two managed clusters, and a runtime reconciling on it."""

    hub: Any
    clusters: dict[str, Any]
    backend: RecordingBackend
    runtime: Runtime

    def apply(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Create or replace MetricSource ``name`` on the hub; returns the stored object."""
        body = {
            "apiVersion": "clusterpulse.io/v1alpha1",
            "kind": "MetricSource",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec,
        }
        current = self.hub.get("clusterpulse.io/v1alpha1", "MetricSource", name, NAMESPACE)
        if current is None:
            return dict(self.hub.create(body))
        body["metadata"] = current["metadata"]
        return dict(self.hub.update(body))

    def metric_source(self, name: str) -> dict[str, Any]:
        """The MetricSource as the hub has it now."""
        found = self.hub.get("clusterpulse.io/v1alpha1", "MetricSource", name, NAMESPACE)
        assert found is not None
        return dict(found)

    def reconcile(self, name: str) -> Outcome:
        """Reconcile MetricSource ``name`` once through the core runtime."""
        return reconcile_object(self.runtime, "metricsource", METRIC_SOURCE, self.metric_source(name))

    def delete(self, name: str) -> Outcome:
        """Reconcile the deletion of MetricSource ``name`` (as the runtime does on a delete event)."""
        obj = self.metric_source(name)
        obj["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
        return reconcile_object(self.runtime, "metricsource", METRIC_SOURCE, obj)


def ref(name: str) -> ObjectRef:
    """The reference of a MetricSource in the test namespace."""
    return ObjectRef("MetricSource", NAMESPACE, name)


@pytest.fixture
def fleet(kube_api: Callable[..., Any]) -> Iterator[Fleet]:
    """Hub + clusters ``east`` and ``west`` (token-protected) + an unconnected ``north``."""
    hub = kube_api()
    hub.add_crd("clusterpulse.io", "v1alpha1", "MetricSource", "metricsources", short_names=("ms",))
    hub.add_crd("clusterpulse.io", "v1alpha1", "ClusterConnection", "clusterconnections")
    hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    clusters = {}
    objects = {
        "east": [
            cactus("team-a", "saguaro", "500m", 3, "Blooming", {"tier": "tall"}),
            cactus("team-a", "barrel", "2Gi", 0, "Dormant"),
            cactus("team-b", "cholla", "1.5", 5, "Blooming"),
            cactus("kube-system", "agave", "x", 1, "Dormant"),
        ],
        "west": [cactus("team-a", "prickly", "250m", 2, "Blooming"), cactus("team-c", "opuntia", "1k", 7, "Blooming")],
    }
    for name, items in objects.items():
        token = f"{name}-secret-token"
        cluster = kube_api(require_token=token)
        cluster.add_crd(CUSTOM_GROUP, "v1", "Cactus", "cacti")
        for namespace in ("team-a", "team-b", "team-c", "kube-system"):
            cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        cluster.seed(items)
        hub.create(_secret(f"{name}-token", token))
        hub.create(_connection(name, cluster.url, "Connected"))
        clusters[name] = cluster
    hub.create(_secret("north-token", "irrelevant"))
    hub.create(_connection("north", "http://127.0.0.1:1", "Error"))

    backend = RecordingBackend()
    # The cluster plugin offers the typed fleet view (clusterpulse_fleet) the MetricSources collect from.
    host = PluginHost(
        [], extra={"cluster": ClusterPlugin, "metricsource": MetricSourcePlugin, "recording": BackendPlugin(backend)}
    )
    config = Config(core=CoreSettings(plugins=(), namespace=NAMESPACE, request_timeout=10.0))
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    yield Fleet(hub, clusters, backend, runtime)
    runtime.pool.close()
    runtime.hub.close()
