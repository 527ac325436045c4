"""The typed fleet view this plugin offers through ``clusterpulse_fleet``.

The one place a ClusterConnection object is read for other plugins: name, endpoint, credentials
Secret, collection mode, phase and the agent as the hub recorded it. A value of the wrong type
reads as absent (the reconcile reports it on the object itself, as ``phase: Error``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from clusterpulse_model import AgentStatus, CredentialsRef
from clusterpulse_model.fleet import FleetCluster

from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.spec import PULL, PUSH
from clusterpulse_core.kinds import ObjectRef, ResourceKind
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.serde import parse_time


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _time(value: Any) -> datetime | None:
    try:
        return parse_time(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def fleet_cluster(obj: Mapping[str, Any]) -> FleetCluster:
    """A ClusterConnection object as a :class:`FleetCluster`."""
    meta, spec, status = _mapping(obj.get("metadata")), _mapping(obj.get("spec")), _mapping(obj.get("status"))
    namespace = _text(meta.get("namespace"))
    credentials = _mapping(spec.get("credentialsRef"))
    deployed, collector = _mapping(status.get("agent")), _mapping(status.get("collectorStatus"))
    return FleetCluster(
        name=_text(meta.get("name")),
        namespace=namespace,
        endpoint=_text(spec.get("endpoint")),
        credentials=CredentialsRef(
            name=_text(credentials.get("name")), namespace=_text(credentials.get("namespace")) or namespace
        ),
        # Only exactly "push" selects push mode (docs/compatibility.md#cluster-reconcile).
        collection_mode=PUSH if spec.get("collectionMode") == PUSH else PULL,
        phase=_text(status.get("phase")),
        agent=AgentStatus(
            deployed=deployed.get("deployed") is True,
            version=_text(deployed.get("version")),
            connected=collector.get("connected") is True,
            last_heartbeat=_time(collector.get("lastHeartbeat")),
        ),
    )


class ClusterFleet:
    """The :class:`clusterpulse_model.fleet.Fleet` of the ClusterConnections."""

    kind: ResourceKind = CLUSTER_CONNECTION

    def clusters(self, hub: KubeClient, namespace: str) -> Sequence[FleetCluster]:
        """Every ClusterConnection of ``namespace``, listed from the hub now."""
        return [fleet_cluster(obj) for obj in hub.list_items(self.kind.api_path(namespace))]

    def cluster(self, obj: Mapping[str, Any]) -> FleetCluster:
        """One ClusterConnection object (from an informer cache, say), typed."""
        return fleet_cluster(obj)

    def ref(self, namespace: str, name: str) -> ObjectRef:
        """The reference of ClusterConnection ``namespace/name``."""
        return ObjectRef(self.kind.kind, namespace, name)


FLEET = ClusterFleet()
