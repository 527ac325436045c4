"""The cluster plugin: ClusterConnection kind, its reconcile and the per-cluster collectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from clusterpulse_model import ClusterMetrics, HealthVerdict, cluster_health
from clusterpulse_model.fleet import Fleet

from clusterpulse_cluster.agent_deploy.deployer import TransportMismatchError, ingester_transport
from clusterpulse_cluster.clusteroperators import ClusterOperatorsCollector
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.fleet import FLEET
from clusterpulse_cluster.info import ClusterInfoCollector
from clusterpulse_cluster.inventory import COUNTED_PATHS, InventoryCollector
from clusterpulse_cluster.olm import OperatorsCollector
from clusterpulse_cluster.reconcile import NODES_COLLECTOR, ClusterReconciler
from clusterpulse_cluster.resources import ResourceLists
from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_core import hookimpl
from clusterpulse_core.clock import utcnow
from clusterpulse_core.collect import Collector
from clusterpulse_core.config import Config
from clusterpulse_core.context import ManagedClusterAddress, ManagedClusterError, Runtime
from clusterpulse_core.hookspecs import HookDeclarer
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.kube.client import KubeClient, NotFoundError
from clusterpulse_core.plugins import PluginHost


class ClusterPlugin:
    """Pull-mode fleet monitoring: reconciles ClusterConnections and collects each cluster."""

    clusterpulse_api_version = 1

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        #: The time source of timestamps and scan intervals (tests replace it with a fixed clock).
        self.clock = clock
        self.settings = ClusterSettings()
        self.reconciler = ClusterReconciler(self.settings, self.now)

    def now(self) -> datetime:
        """The current time according to :attr:`clock`."""
        return self.clock()

    @hookimpl
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        """Declare this plugin's hooks (:mod:`clusterpulse_cluster.hookspecs`)."""
        from clusterpulse_cluster import hookspecs

        pluginmanager.add_hookspecs(hookspecs)

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.cluster]`` is validated by :class:`ClusterSettings`."""
        return ClusterSettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: ClusterSettings | None) -> None:
        """Keep the validated settings."""
        self.settings = settings or ClusterSettings()
        self.reconciler.close()
        self.reconciler = ClusterReconciler(self.settings, self.now)

    @hookimpl
    def clusterpulse_check_config(self, config: Config, plugins: PluginHost) -> Sequence[str]:
        """``ingester_tls_enabled`` set and disagreeing with the ingester's ``tls_enabled`` is a problem (one
        setting decides what deployed agents get): ``config check`` reports it and ``run`` refuses to start."""
        try:
            ingester_transport(plugins, self.settings)
        except TransportMismatchError as exc:
            return [str(exc)]
        return []

    @hookimpl
    def clusterpulse_storage_lost(self, runtime: Runtime, reason: str) -> None:
        """Storage lost its data: the next reconcile of each cluster scans OLM again."""
        self.reconciler.forget_scans()

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        """Shut the shared collector thread pool down."""
        self.reconciler.close()

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        """This plugin owns ClusterConnection, reconciled by :class:`ClusterReconciler` (built at configuration)."""
        return [CLUSTER_CONNECTION.with_reconciler(self.reconciler)]

    @hookimpl
    def clusterpulse_collectors(self, where: str) -> Sequence[Collector]:
        """Nodes with the resource lists (critical), cluster info, OLM operators, OpenShift ClusterOperators.

        The resource lists (docs/compatibility.md#r3) are made by the nodes collector, from its own pod
        sweep; their failure fails nothing. Inside the push agent (``where == "agent"``) OLM
        operators follow the agent's rules; the counts and resource lists the upstream proto has
        no field for travel in the protocol extension (docs/push-mode.md#protocol-extension).
        """
        agent = where == "agent"
        settings = self.settings
        resources = ResourceLists(settings, self.now) if settings.resource_collection_enabled else None
        return [
            Collector(
                NODES_COLLECTOR,
                InventoryCollector(
                    settings.page_size,
                    self.now,
                    settings.max_annotation_bytes,
                    tuple(COUNTED_PATHS),
                    resources,
                    settings.max_nodes,
                    settings.max_list_objects,
                ),
                critical=True,
            ),
            Collector("cluster_info", ClusterInfoCollector()),
            Collector(
                "operators",
                OperatorsCollector(
                    settings.operator_scan_interval,
                    self.now,
                    agent=agent,
                    max_objects=settings.max_list_objects,
                    page_size=settings.page_size,
                ),
            ),
            Collector("cluster_operators", ClusterOperatorsCollector(settings.max_list_objects, settings.page_size)),
        ]

    @hookimpl
    def clusterpulse_managed_cluster(self, name: str, namespace: str, hub: KubeClient) -> ManagedClusterAddress | None:
        """ClusterConnection ``namespace/name``'s endpoint and credentials Secret, read from the hub now."""
        try:
            cluster = FLEET.cluster(hub.get(CLUSTER_CONNECTION.api_path(namespace, name)))
        except NotFoundError:
            return None
        if not cluster.endpoint:
            raise ManagedClusterError(f"ClusterConnection {namespace}/{name} has no spec.endpoint")
        return ManagedClusterAddress(cluster.endpoint, cluster.credentials.namespace, cluster.credentials.name)

    @hookimpl
    def clusterpulse_fleet(self) -> Fleet:
        """The typed view of the ClusterConnections, for the other plugins."""
        return FLEET

    @hookimpl(trylast=True)  # the default verdict: a plugin with a health policy of its own answers first
    def clusterpulse_cluster_health(self, metrics: ClusterMetrics) -> HealthVerdict:
        """The verdict of these totals under this plugin's thresholds (pushed batches ask it too)."""
        return cluster_health(metrics, self.settings.health_thresholds())
