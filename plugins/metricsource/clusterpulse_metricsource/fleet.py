"""Collecting one MetricSource from every connected cluster in parallel (docs/compatibility.md#metricsource-reconcile).

Only ClusterConnections in the watch namespace whose ``status.phase`` is exactly ``Connected``
are used, except those a connected push agent serves (it evaluates the sources itself). Each
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

from clusterpulse_core import deadline
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.kube.credentials import cluster_credentials

log = logging.getLogger(__name__)

CLUSTER_CONNECTIONS = "/apis/clusterpulse.io/v1alpha1/namespaces/{namespace}/clusterconnections"
#: Extra seconds allowed past a source's timeout before a cluster is given up on.
DEADLINE_GRACE_SECONDS = 1.0
MAX_PARALLEL_CLUSTERS = 16


@attrs.frozen
class ClusterRef:
    """What is needed to reach one connected managed cluster."""

    name: str
    endpoint: str
    secret_namespace: str
    secret_name: str


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


def connected_clusters(hub: KubeClient, namespace: str) -> list[ClusterRef]:
    """The ClusterConnections in ``namespace`` whose status phase is ``Connected`` and that no push agent serves."""
    refs = []
    for obj in hub.list_items(CLUSTER_CONNECTIONS.format(namespace=namespace)):
        status = obj.get("status") or {}
        if status.get("phase") != "Connected":
            continue
        if (status.get("collectorStatus") or {}).get("connected") is True:
            continue  # a push agent collects this cluster's MetricSources itself
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        creds = spec.get("credentialsRef") or {}
        refs.append(ClusterRef(
            name=str(meta.get("name") or ""),
            endpoint=str(spec.get("endpoint") or ""),
            secret_namespace=str(creds.get("namespace") or meta.get("namespace") or namespace),
            secret_name=str(creds.get("name") or ""),
        ))
    return refs


def _target(runtime: Runtime, ref: ClusterRef) -> ClusterTarget:
    credentials = cluster_credentials(runtime.hub, ref.endpoint, ref.secret_namespace, ref.secret_name,
                                      runtime.secrets)
    return ClusterTarget(ref.name, ref.endpoint, runtime.pool.get(ref.name, credentials))


def collect_fleet(runtime: Runtime, collector: ClusterCollector, clusters: Sequence[ClusterRef]) -> FleetOutcome:
    """Collect from every cluster in parallel; a failing or hanging cluster is one failure."""
    if not clusters:
        return FleetOutcome({}, {})
    timeout = collector.program.compiled.collection.timeout_seconds + DEADLINE_GRACE_SECONDS

    def run(ref: ClusterRef) -> ClusterResult:
        # Every call to the cluster stops at the deadline: no thread outlives the source's timeout.
        with deadline.within(timeout), runtime.pool.in_flight(ref.name):
            return collector.collect(_target(runtime, ref))

    pool = ThreadPoolExecutor(max_workers=min(len(clusters), MAX_PARALLEL_CLUSTERS),
                              thread_name_prefix="metricsource-cluster")
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
