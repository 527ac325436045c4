"""An alert rule plugin: what a third party writes to add a rule (no import of the alerts plugin)."""

from __future__ import annotations

from clusterpulse_model.alerting import ClusterView, Finding

from clusterpulse_core import hookimpl
from clusterpulse_core.hookspecs import Register

clusterpulse_api_version = 1


def small_cluster(view: ClusterView, threshold: float | None) -> list[Finding] | None:
    """Fires when a cluster has fewer nodes than ``threshold``."""
    if view.nodes is None:
        return None
    if len(view.nodes) >= (threshold or 0):
        return []
    return [Finding("cluster", view.name, f"cluster {view.name} has only {len(view.nodes)} nodes")]


@hookimpl
def clusterpulse_register_alert_rules(register: Register) -> None:
    """One rule: ``ExampleSmallCluster`` (info, fires at once, threshold 3 nodes)."""
    register(
        "ExampleSmallCluster",
        small_cluster,
        severity="info",
        for_seconds=0.0,
        threshold=3,
        summary="fewer than threshold nodes",
    )
