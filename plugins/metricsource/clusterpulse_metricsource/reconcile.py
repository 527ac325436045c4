"""Reconciling one MetricSource (controllers.md §9 with the decisions).

compile -> store the compiled definition -> collect from every connected cluster -> store
per-cluster results -> patch the status -> publish the event -> requeue per spec. An invalid
MetricSource never raises out of here: it gets ``phase: Error`` with the message and is
retried after 30 s, and the next valid edit recovers it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import attrs
from clusterpulse_metricsource.catalog import Catalog
from clusterpulse_metricsource.collector import ClusterCollector
from clusterpulse_metricsource.compiler import compile_metric_source
from clusterpulse_metricsource.discovery import Discovery
from clusterpulse_metricsource.errors import CompileError, MetricSourceError
from clusterpulse_metricsource.fleet import FleetOutcome, collect_fleet, connected_clusters, event_data
from clusterpulse_metricsource.settings import MetricSourceSettings
from clusterpulse_metricsource.status import ERROR_REQUEUE_SECONDS, collected_status, failed_status, requeue_seconds
from prometheus_client import CollectorRegistry, Counter

from clusterpulse_core.context import ReconcileContext
from clusterpulse_core.contributions import Contributions
from clusterpulse_core.kinds import ObjectRef, ReconcileResult
from clusterpulse_core.model.time import utcnow
from clusterpulse_core.pieces import (
    AggregationsPiece,
    CustomResourcesPiece,
    EventPiece,
    MetricSourceDeletion,
    MetricSourceOutcomePiece,
    MetricSourcePiece,
)
from clusterpulse_core.serde import unstructure

EVENT_CHANNEL = "metricsource-events"
#: The shortest collection interval (as ClusterConnection's); shorter ones are raised, with a note.
MIN_INTERVAL_SECONDS = 30
DISCOVERY_TIMEOUT_SECONDS = 5.0


class MetricSourceReconciler:
    """Holds what outlives one reconcile: compiled programs by source id and discovery answers."""

    def __init__(self, settings: MetricSourceSettings | None = None) -> None:
        self.settings = settings or MetricSourceSettings()
        self.discovery = Discovery()
        self._lock = threading.Lock()
        self._collectors: dict[str, ClusterCollector] = {}
        self._catalogs: dict[int, Catalog] = {}
        self._counters: dict[int, Counter] = {}

    def compiled(self, source_id: str) -> ClusterCollector | None:
        """The cached collector (with its program) of a source, if it compiled."""
        with self._lock:
            return self._collectors.get(source_id)

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
        """Compile, store, collect, report; failures become an ``Error`` status, never an exception."""
        started = time.monotonic()
        meta = obj.get("metadata") or {}
        generation = int(meta.get("generation") or 0)
        source_id = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        try:
            collector = self._compile(obj, ctx)
            program = collector.program
            compiled = program.compiled
            ctx.store(MetricSourcePiece(
                namespace=compiled.namespace, name=compiled.name, compiled=compiled,
                resource_type_name=compiled.rbac.resource_type_name, kind=compiled.source.kind,
                api_version=compiled.source.api_version, compiled_at=compiled.compiled_at, hash=compiled.hash,
            ))
            with self._lock:
                self._collectors[source_id] = collector
            clusters = connected_clusters(ctx.hub, ctx.runtime.namespace)
        except Exception as exc:
            message = str(exc) if isinstance(exc, MetricSourceError) else _describe(exc)
            previous = obj.get("status") or {}
            if isinstance(exc, MetricSourceError) and (previous.get("phase") != "Error"
                                                       or previous.get("message") != message):
                ctx.event("CompileError", message, warning=True, uid=str(meta.get("uid") or ""))
            return self._fail(obj, ctx, message, generation)

        outcome = collect_fleet(ctx.runtime, collector, clusters)
        detail = self._report_function_failures(outcome, source_id, ctx)
        for cluster, result in outcome.results.items():
            pieces: list[Any] = [CustomResourcesPiece(cluster, result.collection)]
            if result.aggregations is not None:
                pieces.append(AggregationsPiece(cluster, result.aggregations))
            try:
                ctx.store(*pieces)
            except Exception as exc:
                ctx.log.error("storing the collection of cluster %s failed: %s", cluster, exc)

        if outcome.unknown_kind:
            source = compiled.source
            return self._fail(obj, ctx, f"kind {source.api_version}/{source.kind} does not exist on cluster(s) "
                                        f"{', '.join(outcome.unknown_kind)}", generation)
        interval = compiled.collection.interval_seconds
        status = collected_status(utcnow(), time.monotonic() - started, outcome.resources, outcome.clusters,
                                  outcome.errors, generation, detail)
        if interval < MIN_INTERVAL_SECONDS:
            status = attrs.evolve(status, message=f"{status.message}; intervalSeconds {interval} raised to "
                                                  f"the minimum {MIN_INTERVAL_SECONDS}")
            interval = MIN_INTERVAL_SECONDS
        try:
            ctx.patch_status(unstructure(status))
        except Exception as exc:
            ctx.log.error("status update failed: %s", exc)
        try:
            ctx.store(MetricSourceOutcomePiece(source_id, tuple(sorted(outcome.results)), dict(outcome.failures)),
                      EventPiece("reconciled", source_id, event_data(outcome), channel=EVENT_CHANNEL))
        except Exception as exc:
            ctx.log.error("publishing the reconciled event failed: %s", exc)
        return ReconcileResult(requeue_after=requeue_seconds(interval, outcome.errors))

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        """Drop the cached program, remove the stored state and publish ``deleted``."""
        source_id = f"{ref.namespace}/{ref.name}"
        with self._lock:
            self._collectors.pop(source_id, None)
        ctx.store(MetricSourceDeletion(ref.namespace, ref.name),
                  EventPiece("deleted", source_id, None, channel=EVENT_CHANNEL))
        return True

    # ------------------------------------------------------------------ helpers

    def _report_function_failures(self, outcome: FleetOutcome, source_id: str, ctx: ReconcileContext) -> str:
        """Log and count every plugin function failure; the first one, for the status message."""
        first = ""
        counter = self._function_errors(ctx.runtime.metrics)
        for cluster, result in sorted(outcome.results.items()):
            for failure in result.function_failures:
                described = f"cluster {cluster}: {failure.describe()}"
                ctx.log.warning("%s", described)  # the logger adds "[MetricSource ns/name]"
                counter.labels(source=source_id, cluster=cluster, function=failure.function).inc(failure.count)
                first = first or described
        return first

    def _function_errors(self, registry: CollectorRegistry) -> Counter:
        key = id(registry)
        with self._lock:
            counter = self._counters.get(key)
            if counter is None:
                counter = self._counters[key] = Counter(
                    "clusterpulse_metricsource_function_errors_total",
                    "Values left null because a plugin expression or aggregation function raised",
                    ["source", "cluster", "function"], registry=registry)
            return counter

    def _compile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ClusterCollector:
        catalog = self._catalog(ctx.runtime.contributions)

        def discover(group: str, version: str, kind: str) -> str | None:
            return self.discovery.resource_for(ctx.hub, group, version, kind, timeout=DISCOVERY_TIMEOUT_SECONDS)

        program = compile_metric_source(obj, catalog, discover=discover)
        source = program.compiled.source
        refusal = self.settings.refusal(source.api_version, source.kind)
        if refusal:
            raise CompileError(refusal)
        return ClusterCollector(program, self.discovery)

    def _catalog(self, contributions: Contributions) -> Catalog:
        key = id(contributions)
        with self._lock:
            catalog = self._catalogs.get(key)
            if catalog is None:
                catalog = self._catalogs[key] = Catalog.from_contributions(contributions)
            return catalog

    def _fail(self, obj: Mapping[str, Any], ctx: ReconcileContext, message: str,
              generation: int) -> ReconcileResult:
        previous = (obj.get("status") or {}).get("errorsLastRun") or 0
        status = failed_status(utcnow(), message, int(previous) if isinstance(previous, int) else 0, generation)
        ctx.log.warning("MetricSource failed: %s", message)
        try:
            ctx.patch_status(unstructure(status))
        except Exception as exc:
            ctx.log.error("status update failed: %s", exc)
        return ReconcileResult(requeue_after=ERROR_REQUEUE_SECONDS, error=message)


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
