"""Reconciling one MetricSource (docs/compatibility.md#metricsource-reconcile with the decisions).

compile -> store the compiled definition -> collect from every connected cluster -> store
per-cluster results -> patch the status -> publish the event -> requeue per spec. An invalid
MetricSource never raises out of here: it gets ``phase: Error`` with the message and is
retried after 30 s, and the next valid edit recovers it.

With ``sharding = true`` (``ctx.runtime.shard``) every replica reconciles every MetricSource
but collects only from the clusters whose ClusterConnection it holds (so a cluster's MetricSource
collection moves with its ClusterConnection, under the same handover), stores those clusters'
results and reports its share in ``status.shards.<identity>``; the replica holding the
MetricSource itself stores the definition, adds the shares up into the status and publishes the
event (:mod:`clusterpulse_metricsource.shares`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
from clusterpulse_metricsource.catalog import Catalog
from clusterpulse_metricsource.collector import ClusterCollector
from clusterpulse_metricsource.compiler import SpecError, compile_metric_source
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_metricsource.discovery import Discovery
from clusterpulse_metricsource.errors import CompileError, MetricSourceError
from clusterpulse_metricsource.fleet import FleetOutcome, collect_fleet, connected_clusters, event_data, fleet_of
from clusterpulse_metricsource.settings import MetricSourceSettings
from clusterpulse_metricsource.shares import SHARDS_FIELD, ClusterShare, ShardShare, Totals, add_up, read_shares
from clusterpulse_metricsource.status import (
    ERROR_REQUEUE_SECONDS,
    CollectedStatus,
    collected_status,
    failed_status,
    requeue_seconds,
)
from clusterpulse_model.fleet import FleetCluster
from clusterpulse_model.pieces import (
    AggregationsPiece,
    CustomResourcesPiece,
    EventPiece,
    MetricSourceDeletion,
    MetricSourceOutcomePiece,
    MetricSourcePiece,
)
from prometheus_client import CollectorRegistry, Counter

from clusterpulse_core.clock import utcnow
from clusterpulse_core.context import MAX_STATUS_MESSAGE, ReconcileContext, Runtime
from clusterpulse_core.contributions import Contributions
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, stored_refs
from clusterpulse_core.kube.client import KubeApiError, hub_unreachable
from clusterpulse_core.logs import clip
from clusterpulse_core.serde import unstructure

if TYPE_CHECKING:
    from clusterpulse_metricsource.compiled import CompiledMetricSource

    from clusterpulse_core.runtime.sharding import ShardMember

EVENT_CHANNEL = "metricsource-events"
#: The shortest collection interval (as ClusterConnection's); shorter ones are raised, with a note.
MIN_INTERVAL_SECONDS = 30
DISCOVERY_TIMEOUT_SECONDS = 5.0
#: Sharded: how soon the holder of a source comes back when a live member's share is missing.
SHARE_CATCH_UP_SECONDS = 5.0


def _unknown_kind(compiled: CompiledMetricSource, clusters: Iterable[str]) -> str:
    """The status message of a source whose resource kind some clusters do not serve."""
    source = compiled.source
    return f"kind {source.api_version}/{source.kind} does not exist on cluster(s) {', '.join(clusters)}"


class _Counts(Protocol):
    """What a run collected: a replica's own (the fleet outcome) or every replica's added up."""

    @property
    def resources(self) -> int:
        """Resources collected."""

    @property
    def clusters(self) -> int:
        """Clusters collected from."""

    @property
    def errors(self) -> int:
        """Clusters that failed."""


def _collected(counts: _Counts, started: float, generation: int, detail: str, interval: int) -> CollectedStatus:
    """The ``Active`` status of a run begun at ``started`` (monotonic), saying so when
    ``intervalSeconds`` is below the minimum (which is used instead)."""
    status = collected_status(
        utcnow(), time.monotonic() - started, counts.resources, counts.clusters, counts.errors, generation, detail
    )
    if interval >= MIN_INTERVAL_SECONDS:
        return status
    message = f"{status.message}; intervalSeconds {interval} raised to the minimum {MIN_INTERVAL_SECONDS}"
    return attrs.evolve(status, message=message)


class MetricSourceReconciler:
    """Reconciles MetricSources (the :class:`~clusterpulse_core.kinds.Reconciler` the kind declares).

    Holds what outlives one reconcile: compiled programs by source id and discovery answers.
    """

    def __init__(self, settings: MetricSourceSettings | None = None) -> None:
        self.settings = settings or MetricSourceSettings()
        self.discovery = Discovery()
        self._lock = threading.Lock()
        self._collectors: dict[str, ClusterCollector] = {}
        self._catalogs: dict[int, Catalog] = {}
        self._counters: dict[int, Counter] = {}
        #: Sharded: sources whose holder already came back early once for a missing share.
        self._caught_up: set[str] = set()
        #: The last good read of the connected clusters (namespace -> refs), used while the hub is down.
        self._known_clusters: dict[str, list[FleetCluster]] = {}
        self._hub_down = False

    def clusters(self, ctx: ReconcileContext) -> list[FleetCluster]:
        """The connected clusters to collect from; while the hub cannot be reached, the last ones read.

        A hub outage must not stop collection: the managed clusters are still there, only the
        list of them cannot be read. Logged once per outage.
        """
        namespace = ctx.runtime.namespace
        try:
            clusters = connected_clusters(fleet_of(ctx.runtime), ctx.hub, namespace)
        except KubeApiError as exc:
            with self._lock:
                known = self._known_clusters.get(namespace)
                first, self._hub_down = not self._hub_down, True
            if known is None or not hub_unreachable(exc):
                raise
            if first:
                ctx.log.warning(
                    "hub unreachable listing ClusterConnections (%s): collecting from the %d last known",
                    exc,
                    len(known),
                )
            return list(known)
        with self._lock:
            self._known_clusters[namespace] = clusters
            self._hub_down = False
        return clusters

    def compiled(self, source_id: str) -> ClusterCollector | None:
        """The cached collector (with its program) of a source, if it compiled."""
        with self._lock:
            return self._collectors.get(source_id)

    def resource_types(self) -> list[tuple[str, str]]:
        """``(group, resource)`` of every compiled source, sorted and unique."""
        with self._lock:
            sources = [collector.program.compiled.source for collector in self._collectors.values()]
        return sorted({(source.group, source.resource) for source in sources})

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
        """Compile, store, collect, report; failures become an ``Error`` status, never an exception."""
        shard = ctx.runtime.shard
        if shard is not None and ctx.kind.split_by:
            return self._reconcile_share(obj, ctx, shard)
        started = time.monotonic()
        meta = obj.get("metadata") or {}
        generation = int(meta.get("generation") or 0)
        source_id = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        try:
            collector = self._compile(obj, ctx)
            program = collector.program
            compiled = program.compiled
            ctx.store(_definition(compiled))
            with self._lock:
                self._collectors[source_id] = collector
            clusters = self.clusters(ctx)
        except Exception as exc:
            return self._not_compiled(obj, ctx, exc, generation)

        outcome = collect_fleet(ctx.runtime, collector, clusters)
        detail = self._report_function_failures(outcome, source_id, ctx)
        _store_results(outcome, ctx)

        if outcome.unknown_kind:
            return self._fail(obj, ctx, _unknown_kind(compiled, outcome.unknown_kind), generation)
        interval = compiled.collection.interval_seconds
        status = _collected(outcome, started, generation, detail, interval)
        interval = max(interval, MIN_INTERVAL_SECONDS)
        try:
            ctx.patch_status(unstructure(status))
        except Exception as exc:
            ctx.log.error("status update failed: %s", exc)
        try:
            ctx.store(
                MetricSourceOutcomePiece(source_id, tuple(sorted(outcome.results)), dict(outcome.failures)),
                EventPiece("reconciled", source_id, event_data(outcome), channel=EVENT_CHANNEL),
            )
        except Exception as exc:
            ctx.log.error("publishing the reconciled event failed: %s", exc)
        return ReconcileResult(requeue_after=requeue_seconds(interval, outcome.errors))

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """The MetricSources storage holds (``metricsources``: ``<ns>/<name>``)."""
        return stored_refs(runtime, METRIC_SOURCE.kind, "metricsources", namespaced=True)

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        """Drop the cached program, remove the stored state and publish ``deleted``.

        With sharding only the replica the ring gives the MetricSource to removes the stored state
        (not only once it holds it: a deletion during a handover must not be lost; removing twice
        is harmless).
        """
        source_id = f"{ref.namespace}/{ref.name}"
        with self._lock:
            self._collectors.pop(source_id, None)
        shard = ctx.runtime.shard
        if shard is not None and ctx.kind.split_by and not shard.owns(ref):
            return True
        ctx.store(
            MetricSourceDeletion(ref.namespace, ref.name), EventPiece("deleted", source_id, None, channel=EVENT_CHANNEL)
        )
        return True

    def _reconcile_share(self, obj: Mapping[str, Any], ctx: ReconcileContext, shard: ShardMember) -> ReconcileResult:
        """One replica's share of a sharded fleet, plus the object-level part on the one holding the object."""
        started = time.monotonic()
        meta = obj.get("metadata") or {}
        generation = int(meta.get("generation") or 0)
        source_id = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        holder = shard.admit(ctx.ref)
        try:
            collector = self._compile(obj, ctx)
            compiled = collector.program.compiled
            if holder:
                ctx.store(_definition(compiled))
            with self._lock:
                self._collectors[source_id] = collector
            clusters = self.clusters(ctx)
        except Exception as exc:
            if not holder:  # the holder reports it
                return ReconcileResult(requeue_after=ERROR_REQUEUE_SECONDS, error=_message(exc))
            return self._not_compiled(obj, ctx, exc, generation)

        by_ref = {ObjectRef(ctx.kind.split_by, ctx.runtime.namespace, ref.name): ref for ref in clusters}
        with shard.using(by_ref) as held:  # a cluster being handed over waits for this run to end
            outcome = collect_fleet(ctx.runtime, collector, [ref for key, ref in by_ref.items() if key in held])
            detail = self._report_function_failures(outcome, source_id, ctx)
            _store_results(outcome, ctx)
            try:
                ctx.store(MetricSourceOutcomePiece(source_id, tuple(sorted(outcome.results)), dict(outcome.failures)))
            except Exception as exc:
                ctx.log.error("storing the outcome failed: %s", exc)
        share = _share_of(outcome, detail)
        entries: dict[str, Any] = {shard.identity: unstructure(share)}
        interval = compiled.collection.interval_seconds
        requeue = ReconcileResult(requeue_after=requeue_seconds(max(interval, MIN_INTERVAL_SECONDS), outcome.errors))
        if not holder:
            try:
                ctx.patch_status({SHARDS_FIELD: entries})
            except Exception as exc:
                ctx.log.error("status update failed: %s", exc)
            return requeue

        shares = {**read_shares(obj.get("status")), shard.identity: share}
        live = set(shard.members) | {shard.identity}
        entries.update({member: None for member in shares if member not in live})  # gone: removed
        totals = add_up(shares, live, {ref.name for ref in clusters})
        if totals.unknown_kind:
            return self._fail(
                obj, ctx, _unknown_kind(compiled, totals.unknown_kind), generation, {SHARDS_FIELD: entries}
            )
        status = _collected(totals, started, generation, totals.detail, interval)
        try:
            ctx.patch_status({**unstructure(status), SHARDS_FIELD: entries})
        except Exception as exc:
            ctx.log.error("status update failed: %s", exc)
        try:
            ctx.store(EventPiece("reconciled", source_id, _totals_data(totals), channel=EVENT_CHANNEL))
        except Exception as exc:
            ctx.log.error("publishing the reconciled event failed: %s", exc)
        # A live member has not reported yet (a new source, a new member): come back once soon to
        # add its share up, rather than show a partial total for a whole interval.
        missing = live - set(shares)
        with self._lock:
            if not missing:
                self._caught_up.discard(source_id)
            elif source_id not in self._caught_up and requeue.requeue_after:
                self._caught_up.add(source_id)
                return ReconcileResult(requeue_after=min(SHARE_CATCH_UP_SECONDS, requeue.requeue_after))
        return requeue

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
                    ["source", "cluster", "function"],
                    registry=registry,
                )
            return counter

    def _compile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ClusterCollector:
        catalog = self._catalog(ctx.runtime.contributions)

        def discover(group: str, version: str, kind: str) -> str | None:
            return self.discovery.resource_for(ctx.hub, group, version, kind, timeout=DISCOVERY_TIMEOUT_SECONDS)

        program = compile_metric_source(obj, catalog, discover=discover)
        source = program.compiled.source
        refusal = self.settings.refusal(source.api_version, source.kind, source.group, source.resource)
        if refusal:
            raise CompileError(refusal)
        settings = self.settings
        return ClusterCollector(
            program,
            self.discovery,
            lambda group, resource: settings.refusal(source.api_version, source.kind, group, resource),
        )

    def _catalog(self, contributions: Contributions) -> Catalog:
        key = id(contributions)
        with self._lock:
            catalog = self._catalogs.get(key)
            if catalog is None:
                catalog = self._catalogs[key] = Catalog.from_contributions(contributions)
            return catalog

    def _not_compiled(
        self, obj: Mapping[str, Any], ctx: ReconcileContext, exc: Exception, generation: int
    ) -> ReconcileResult:
        """The source did not compile (or the clusters could not be listed): ``Error`` status, and a
        ``CompileError`` Event when the compile error is new."""
        message = _message(exc)
        if isinstance(exc, SpecError) and exc.field and exc.field not in message:
            message = f"{message} ({exc.field})"  # upstream's wording, and the field it is about
        previous = obj.get("status") or {}
        if isinstance(exc, MetricSourceError) and (
            previous.get("phase") != "Error" or previous.get("message") != message
        ):
            ctx.event("CompileError", message, warning=True, uid=str((obj.get("metadata") or {}).get("uid") or ""))
        return self._fail(obj, ctx, message, generation)

    def _fail(
        self,
        obj: Mapping[str, Any],
        ctx: ReconcileContext,
        message: str,
        generation: int,
        extra: Mapping[str, Any] | None = None,
    ) -> ReconcileResult:
        previous = (obj.get("status") or {}).get("errorsLastRun") or 0
        status = failed_status(utcnow(), message, int(previous) if isinstance(previous, int) else 0, generation)
        # A repeating failure is logged when it starts or changes, not on every retry (the status holds it).
        before = obj.get("status") or {}
        repeated = before.get("phase") == "Error" and before.get("message") == clip(message, MAX_STATUS_MESSAGE)
        (ctx.log.debug if repeated else ctx.log.warning)("MetricSource failed: %s", message)
        try:
            ctx.patch_status({**unstructure(status), **(extra or {})})
        except Exception as exc:
            ctx.log.error("status update failed: %s", exc)
        return ReconcileResult(requeue_after=ERROR_REQUEUE_SECONDS, error=message)


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _message(exc: Exception) -> str:
    """A MetricSource error as it is (upstream wording), anything else described."""
    return str(exc) if isinstance(exc, MetricSourceError) else _describe(exc)


def _definition(compiled: CompiledMetricSource) -> MetricSourcePiece:
    return MetricSourcePiece(
        namespace=compiled.namespace,
        name=compiled.name,
        compiled=compiled,
        resource_type_name=compiled.rbac.resource_type_name,
        kind=compiled.source.kind,
        api_version=compiled.source.api_version,
        compiled_at=compiled.compiled_at,
        hash=compiled.hash,
    )


def _store_results(outcome: FleetOutcome, ctx: ReconcileContext) -> None:
    """Store every collected cluster's collection (and aggregations); a failed store is logged."""
    for cluster, result in outcome.results.items():
        pieces: list[Any] = [CustomResourcesPiece(cluster, result.collection)]
        if result.aggregations is not None:
            pieces.append(AggregationsPiece(cluster, result.aggregations))
        try:
            ctx.store(*pieces)
        except Exception as exc:
            ctx.log.error("storing the collection of cluster %s failed: %s", cluster, exc)


def _share_of(outcome: FleetOutcome, detail: str) -> ShardShare:
    clusters = {
        name: ClusterShare(result.collection.resource_count, len(result.errors))
        for name, result in outcome.results.items()
    }
    for name, failure in outcome.failures.items():
        clusters[name] = ClusterShare(0, 1, failure or "failed", name in outcome.unknown_kind)
    return ShardShare(utcnow(), clusters, detail)


def _totals_data(totals: Totals) -> dict[str, Any]:
    """The ``reconciled`` event payload of a sharded fleet (as :func:`event_data`)."""
    return {"resources": totals.resources, "clusters": totals.clusters, "errors": totals.errors}
