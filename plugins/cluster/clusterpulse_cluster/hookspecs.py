# mypy: disable-error-code="empty-body"
"""The hooks the cluster plugin declares (through ``clusterpulse_addhooks``).

The typed view of the fleet, and the health verdict of a cluster's totals with this plugin's
thresholds. Callers (metricsource, alerts, ingester) reach them through ``PluginHost.hook``,
``None`` when this plugin is not loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterpulse_core.hookspecs import called, hookspec

if TYPE_CHECKING:
    from clusterpulse_model import ClusterMetrics, HealthVerdict
    from clusterpulse_model.fleet import Fleet


@hookspec(firstresult=True)
@called("first result; by the ingester for every pushed cluster status")
def clusterpulse_cluster_health(metrics: ClusterMetrics) -> HealthVerdict | None:
    """The health and its reason of a reachable cluster with these totals.

    Implemented by the plugin that owns the health thresholds (the cluster plugin, with
    ``NODE_UNHEALTHY_THRESHOLD``, ``CPU_CRITICAL_THRESHOLD``, ...); asked by whatever stores a
    cluster's status from its totals, so a pushed batch gets the same verdict as a pull
    reconcile. With no implementation the caller applies the upstream default thresholds
    (``cluster_health(metrics)`` of the model).
    """


@hookspec(firstresult=True)
@called("first result; by metricsource (clusters to collect), the ingester (agent sign-in), alerts (shards)")
def clusterpulse_fleet() -> Fleet | None:
    """The typed view of the managed clusters (:class:`clusterpulse_model.fleet.Fleet`).

    Implemented by the plugin that owns ClusterConnection (the cluster plugin): ``clusters(hub,
    namespace)`` lists them as :class:`~clusterpulse_model.fleet.FleetCluster` (name, endpoint,
    credentials Secret, collection mode, phase, agent), ``cluster(obj)`` reads one object a caller
    already holds (an informer cache), ``ref`` gives the reference the shard ring holds and ``kind``
    the kind to watch. Other plugins read clusters only through it; ``None`` (or no answer: the
    cluster plugin is not loaded) means there are no clusters to work with, and the caller says so.
    """
