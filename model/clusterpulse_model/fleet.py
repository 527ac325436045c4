"""The typed fleet: the managed clusters as the plugin owning ClusterConnection reads them.

The cluster plugin answers ``clusterpulse_fleet`` with a :class:`Fleet`; every other plugin
(MetricSource collection, the ingester's agent authentication, the alerts' shard ownership)
reads clusters through it instead of parsing ClusterConnection objects or API paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from clusterpulse_core.kinds import ApiAccess
from clusterpulse_model.cluster import AgentStatus, CredentialsRef

if TYPE_CHECKING:
    from clusterpulse_core.kinds import ObjectRef, ResourceKind
    from clusterpulse_core.kube.client import KubeClient

#: The kind of the clusters' objects, as a kind split by cluster names it (``ResourceKind.split_by``).
CLUSTER_KIND = "ClusterConnection"
#: Listing the clusters on the hub: what a kind reading :meth:`Fleet.clusters` adds to its ``hub_access``.
LIST_CLUSTERS = ApiAccess("clusterpulse.io", ("clusterconnections",), ("list",))
#: ``status.phase`` of a cluster the hub reaches.
CONNECTED = "Connected"
PUSH = "push"
PULL = "pull"


@attrs.frozen
class FleetCluster:
    """One managed cluster: what its ClusterConnection says, typed.

    ``credentials`` names the Secret with its credentials (its namespace defaulted to the
    ClusterConnection's); ``phase`` is the status phase (``""`` before the first reconcile);
    ``agent`` is the collector agent as the hub recorded it: ``deployed`` and ``version`` the
    hub's installation (``status.agent``), ``connected`` and ``last_heartbeat`` the agent's
    connection (``status.collectorStatus``).
    """

    name: str
    namespace: str
    endpoint: str
    credentials: CredentialsRef
    collection_mode: str = PULL
    phase: str = ""
    agent: AgentStatus = attrs.field(factory=AgentStatus)

    @property
    def connected(self) -> bool:
        """Whether the hub reaches the cluster (``phase`` exactly ``Connected``)."""
        return self.phase == CONNECTED

    @property
    def push(self) -> bool:
        """Whether a collector agent pushes this cluster's state (``collectionMode: push``)."""
        return self.collection_mode == PUSH


class Fleet(Protocol):
    """The typed view of the clusters, as ``clusterpulse_fleet`` returns it."""

    #: The kind whose objects are the clusters (for an informer, or an :class:`ObjectRef`).
    kind: ResourceKind

    def clusters(self, hub: KubeClient, namespace: str) -> Sequence[FleetCluster]:
        """Every cluster declared in ``namespace`` of the hub, read now (raises the client's errors)."""

    def cluster(self, obj: Mapping[str, Any]) -> FleetCluster:
        """One cluster from its object as the hub returned it (e.g. from an informer cache)."""

    def ref(self, namespace: str, name: str) -> ObjectRef:
        """The reference of cluster ``name`` (what the work queue and the shard ring hold)."""
