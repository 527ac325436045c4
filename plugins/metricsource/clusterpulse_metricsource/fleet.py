"""Collecting one MetricSource from every connected cluster in parallel (docs/compatibility.md#metricsource-reconcile).

The clusters come from the plugin owning them (``clusterpulse_fleet``, the cluster plugin's typed
view): those in the watch namespace whose phase is exactly ``Connected``, except those a connected
push agent serves (it evaluates the sources itself). Each
cluster gets its client from the shared pool (credentials from its Secret) and runs under the
source's timeout; a cluster that hangs is given up on at the deadline, so it never holds back
the results of the others.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import attrs
from clusterpulse_metricsource.collector import ClusterCollector, ClusterResult, UnknownKindError
from clusterpulse_model.fleet import Fleet, FleetCluster

from clusterpulse_core import deadline
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.kube.credentials import cluster_credentials

log = logging.getLogger(__name__)

#: Extra seconds allowed past a source's timeout before a cluster is given up on.
DEADLINE_GRACE_SECONDS = 1.0
MAX_PARALLEL_CLUSTERS = 16


@attrs.frozen
class FleetOutcome:
    """Per-cluster results and failures of one run."""

    results: Mapping[str, ClusterResult]
    failures: Mapping[str, str]
    #: Clusters whose API discovery says the source kind does not exist.
    unknown_kind: tuple[str, ...] = ()

    @property
    def resources(self) -> int:
        """Resources collected across successful clusters."""
        return sum(r.collection.resource_count for r in self.results.values())

    @property
    def clusters(self) -> int:
        """Clusters collected successfully."""
        return len(self.results)

    @property
    def errors(self) -> int:
        """One per failed cluster plus every per-namespace failure."""
        return len(self.failures) + sum(len(r.errors) for r in self.results.values())


class NoFleetError(Exception):
    """No loaded plugin offers the clusters (``clusterpulse_fleet``): there is nothing to collect from."""


def fleet_of(runtime: Runtime) -> Fleet:
    """The typed fleet view of the plugin owning the clusters; :class:`NoFleetError` without one."""
    hook = runtime.plugins.hook("clusterpulse_fleet")
    fleet: Fleet | None = hook() if hook is not None else None
    if fleet is None:
        raise NoFleetError("no plugin offers the managed clusters (clusterpulse_fleet): enable the cluster plugin")
    return fleet


def connected_clusters(fleet: Fleet, hub: KubeClient, namespace: str) -> list[FleetCluster]:
    """The clusters in ``namespace`` whose phase is ``Connected`` and that no push agent serves."""
    # A connected push agent collects its cluster's MetricSources itself.
    return [cluster for cluster in fleet.clusters(hub, namespace) if cluster.connected and not cluster.agent.connected]


def _target(runtime: Runtime, cluster: FleetCluster) -> ClusterTarget:
    credentials = cluster_credentials(
        runtime.hub, cluster.endpoint, cluster.credentials.namespace, cluster.credentials.name, runtime.secrets
    )
    return ClusterTarget(cluster.name, cluster.endpoint, runtime.pool.get(cluster.name, credentials))


def collect_fleet(runtime: Runtime, collector: ClusterCollector, clusters: Sequence[FleetCluster]) -> FleetOutcome:
    """Collect from every cluster in parallel; a failing or hanging cluster is one failure."""
    if not clusters:
        return FleetOutcome({}, {})
    timeout = collector.program.compiled.collection.timeout_seconds + DEADLINE_GRACE_SECONDS

    def run(ref: FleetCluster) -> ClusterResult:
        # Every call to the cluster stops at the deadline: no thread outlives the source's timeout.
        with deadline.within(timeout), runtime.pool.in_flight(ref.name):
            return collector.collect(_target(runtime, ref))

    pool = ThreadPoolExecutor(
        max_workers=min(len(clusters), MAX_PARALLEL_CLUSTERS), thread_name_prefix="metricsource-cluster"
    )
    try:
        futures = {pool.submit(contextvars.copy_context().run, run, ref): ref for ref in clusters}
        wait(futures, timeout=timeout)
        results: dict[str, ClusterResult] = {}
        failures: dict[str, str] = {}
        unknown: list[str] = []
        for future, ref in futures.items():
            if not future.done():
                failures[ref.name] = "context deadline exceeded"
                continue
            try:
                results[ref.name] = future.result()
            except UnknownKindError as exc:
                failures[ref.name] = str(exc)
                unknown.append(ref.name)
            except Exception as exc:
                failures[ref.name] = str(exc)
        for name, error in failures.items():
            log.warning("metricsource %s: cluster %s: %s", collector.program.source_id, name, error)
        return FleetOutcome(results, failures, tuple(sorted(unknown)))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def event_data(outcome: FleetOutcome) -> dict[str, Any]:
    """The ``reconciled`` event payload: resources, clusters, errors."""
    return {"resources": outcome.resources, "clusters": outcome.clusters, "errors": outcome.errors}
