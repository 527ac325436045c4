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
    from clusterpulse_core.model import ClusterMetrics, HealthVerdict


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

