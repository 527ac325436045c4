"""A third-party kind reaches a managed cluster through the public client (``ReconcileContext.managed_cluster``).

A ``Probe`` kind defined here lists a managed cluster's namespaces from its reconcile. It runs under
the real manager (the public test harness) on a hub emulator with a ClusterConnection and its
credentials Secret; the managed cluster is another emulator that requires the Secret's token and
serves HTTPS with the CA the Secret holds.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_testing.harness import Harness
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core import hookimpl
from clusterpulse_core.context import ManagedClusterError, ReconcileContext
from clusterpulse_core.kinds import MANAGED_CLUSTER_ACCESS, ReconcileResult, ResourceKind
from clusterpulse_core.kube.client import KubeClient

NAMESPACE = "clusterpulse"
TOKEN = "managed-token"
PROBE = ResourceKind(
    group="probe.example.com",
    version="v1",
    kind="Probe",
    plural="probes",
    schema={
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"cluster": {"type": "string"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
    hub_access=MANAGED_CLUSTER_ACCESS,
)


class ProbePlugin:
    """Owns ``Probe``: lists the namespaces of the managed cluster its spec names."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.clients: list[KubeClient] = []

    @hookimpl
    def clusterpulse_resource_kinds(self) -> list[ResourceKind]:
        """The one kind."""
        return [PROBE]

    @hookimpl
    def clusterpulse_reconcile(
        self, kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext
    ) -> ReconcileResult:
        """List the namespaces; an unreachable cluster is the status's message."""
        try:
            with ctx.managed_cluster(obj["spec"]["cluster"], timeout=10.0) as client:
                self.clients.append(client)
                names = sorted(item["metadata"]["name"] for item in client.list_items("/api/v1/namespaces"))
        except ManagedClusterError as exc:
            ctx.patch_status({"phase": "Error", "message": str(exc)})
            return ReconcileResult()
        ctx.patch_status({"phase": "Ready", "namespaces": names})
        return ReconcileResult()


def _hub(kube_api: Callable[..., Any], endpoint: str) -> Any:
    hub = kube_api(objects=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    for kind in (CLUSTER_CONNECTION, PROBE):
        hub.add_crd(kind.group, kind.version, kind.kind, kind.plural)
    hub.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "prod-token", "namespace": NAMESPACE},
            "data": {
                "token": base64.b64encode(TOKEN.encode()).decode(),
                "ca.crt": base64.b64encode(loopback_ca().ca_pem.encode()).decode(),
            },
        }
    )
    hub.create(
        {
            "apiVersion": "clusterpulse.io/v1alpha1",
            "kind": "ClusterConnection",
            "metadata": {"name": "prod", "namespace": NAMESPACE},
            "spec": {"endpoint": endpoint, "credentialsRef": {"name": "prod-token"}},
        }
    )
    return hub


def _probe(hub: Any, name: str, cluster: str) -> None:
    hub.create(
        {
            "apiVersion": "probe.example.com/v1",
            "kind": "Probe",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"cluster": cluster},
        }
    )


def _status(harness: Harness, name: str) -> dict[str, Any]:
    return dict((harness.hub.get("probe.example.com/v1", "Probe", name, NAMESPACE) or {}).get("status") or {})


def test_a_third_party_reconcile_reaches_a_managed_cluster_through_the_pooled_client(
    kube_api: Callable[..., Any], clusterpulse_manager: Callable[..., Harness]
) -> None:
    managed = kube_api(
        objects=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ("default", "shop")],
        require_token=TOKEN,
    )
    hub = _hub(kube_api, managed.url)
    plugin = ProbePlugin()
    harness = clusterpulse_manager(["cluster"], hub, extra_plugins={"probe": plugin}, core={"namespace": NAMESPACE})

    _probe(hub, "first", "prod")
    _probe(hub, "second", "prod")
    for name in ("first", "second"):
        status = eventually(
            lambda n=name: _status(harness, n).get("phase"),
            f"{name}'s status",  # type: ignore[misc]
            timeout=harness.timeout,
        )
        assert status == "Ready", _status(harness, name)
        assert _status(harness, name)["namespaces"] == ["default", "shop"]
    # One pooled client for the cluster, behind the cluster's breaker (the first-party collectors' pool).
    assert len(plugin.clients) == 2 and plugin.clients[0] is plugin.clients[1]
    assert plugin.clients[0].breaker is harness.runtime.pool.breaker("prod")
    # The managed cluster saw the Secret's token (require_token) over verified TLS, no other caller.
    assert any(r.path == "/api/v1/namespaces" for r in managed.callers)


def test_an_unknown_cluster_or_a_bad_name_is_one_clear_error(
    kube_api: Callable[..., Any], clusterpulse_manager: Callable[..., Harness]
) -> None:
    hub = _hub(kube_api, "https://127.0.0.1:1")
    harness = clusterpulse_manager(
        ["cluster"], hub, extra_plugins={"probe": ProbePlugin()}, core={"namespace": NAMESPACE}
    )
    _probe(hub, "missing", "staging")
    _probe(hub, "bad", "Not_A_Name")
    for name, message in (
        ("missing", f"no managed cluster {NAMESPACE}/staging"),
        ("bad", "invalid cluster name 'Not_A_Name': not a DNS-1123 subdomain"),
    ):
        status = eventually(
            lambda n=name: _status(harness, n).get("message"),
            f"{name}'s status",  # type: ignore[misc]
            timeout=harness.timeout,
        )
        assert status == message


def test_without_a_plugin_locating_the_clusters_the_error_says_which_to_enable(
    kube_api: Callable[..., Any], clusterpulse_manager: Callable[..., Harness]
) -> None:
    """The core reads no ClusterConnection itself: the cluster plugin locates the clusters."""
    hub = _hub(kube_api, "https://127.0.0.1:1")
    harness = clusterpulse_manager([], hub, extra_plugins={"probe": ProbePlugin()}, core={"namespace": NAMESPACE})
    _probe(hub, "orphan", "prod")
    status = eventually(lambda: _status(harness, "orphan").get("message"), "orphan's status", timeout=harness.timeout)
    assert status == (
        "no loaded plugin locates managed clusters (clusterpulse_managed_cluster): enable the cluster plugin"
    )
