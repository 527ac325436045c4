"""Collecting one MetricSource from one cluster (docs/compatibility.md#metricsource-wire).

Pages are fetched with ``limit = batchSize`` through :meth:`KubeClient.list_pages`, decoded
partially (:mod:`clusterpulse_metricsource.decoding`) and turned into records page by page,
so memory holds one decoded page plus the records. The whole collection runs under the
source's ``timeoutSeconds`` deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import attrs
import msgspec
from clusterpulse_metricsource.compiled import CompiledSource
from clusterpulse_metricsource.decoding import page_decoder
from clusterpulse_metricsource.discovery import Discovery
from clusterpulse_metricsource.errors import MetricSourceError
from clusterpulse_metricsource.failures import FailureTally, FunctionFailure
from clusterpulse_metricsource.namespaces import uses_cluster_wide_list
from clusterpulse_metricsource.program import IDENTITY_STEPS, Program
from clusterpulse_model import AggregationResults, CollectedResource, CustomResourceCollection

from clusterpulse_core.breaker import CircuitOpenError
from clusterpulse_core.clock import utcnow
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.kube.client import KubeApiError, KubeClient, no_gc

NAMESPACE_PAGE_SIZE = 500


class CollectionError(MetricSourceError):
    """A cluster collection failed as a whole (listing, namespace resolution, or the deadline)."""


class UnknownKindError(CollectionError):
    """The cluster's API discovery says the source kind does not exist there."""


class DeadlineExceededError(CollectionError):
    """The collection ran past ``timeoutSeconds``."""

    def __init__(self) -> None:
        super().__init__("context deadline exceeded")


@attrs.frozen
class Deadline:
    """A point in monotonic time that bounds every call of one cluster collection."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """The deadline ``seconds`` from now."""
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left (0 when past)."""
        return max(0.0, self.at - time.monotonic())

    def timeout(self, client: KubeClient) -> float:
        """The timeout of the next call: the client's own, cut to what is left; raises when none is."""
        left = self.remaining()
        if left <= 0:
            raise DeadlineExceededError()
        return min(client.timeout, left)


@attrs.frozen
class ClusterResult:
    """One cluster's collection (and aggregation results when the source has aggregations)."""

    collection: CustomResourceCollection
    aggregations: AggregationResults | None = None
    #: Per-namespace and function failures that did not stop the collection.
    errors: tuple[str, ...] = ()
    #: The failures of plugin functions among ``errors``, with their function names.
    function_failures: tuple[FunctionFailure, ...] = ()


@attrs.frozen
class _Listed:
    """Records of one list (possibly several pages) and whether the cap stopped it."""

    records: list[CollectedResource]
    capped: bool


#: ``refuse(group, resource)``: why the collector must not list the resolved resource, or ``""``.
Refuse = Callable[[str, str], str]


class RefusedSourceError(CollectionError):
    """The source resolves, on this cluster, to a resource the collector may not read (Secrets)."""


class ClusterCollector:
    """Runs one compiled MetricSource against clusters; build once per compile, reuse per cluster.

    ``refuse`` is asked again about the resource each cluster's discovery resolves the kind to,
    before anything is listed: a kind that is Secrets on one cluster only is refused there.
    """

    def __init__(self, program: Program, discovery: Discovery | None = None, refuse: Refuse | None = None) -> None:
        self.program = program
        self.discovery = discovery or Discovery()
        self.refuse = refuse
        paths = [e.steps for e in program.extractors] + list(IDENTITY_STEPS)
        self._decoder = page_decoder(paths)

    def collect(self, target: ClusterTarget) -> ClusterResult:
        """Collect from one cluster; raises :class:`CollectionError` when the cluster fails as a whole."""
        compiled = self.program.compiled
        settings = compiled.collection
        started_at, started = utcnow(), time.monotonic()
        deadline = Deadline.after(settings.timeout_seconds)
        client = target.client
        source = compiled.source
        served = self.discovery.serves(
            client, source.group, source.version, source.kind, timeout=deadline.timeout(client)
        )
        if served is False:
            raise UnknownKindError(f"kind {source.api_version}/{source.kind} does not exist on cluster {target.name}")
        resource = self._resource_name(client, source, deadline)
        refused = self.refuse(source.group, resource) if self.refuse is not None else ""
        if refused:
            raise RefusedSourceError(
                f"kind {source.api_version}/{source.kind} resolves to {source.group or 'core'}/"
                f"{resource} on cluster {target.name}, which is not read: {refused}"
            )
        errors: list[str] = []
        tally = FailureTally()
        if source.scope == "Cluster":
            listed = self._wrap(
                "failed to collect cluster-scoped resources",
                lambda: self._list(client, _path(source, resource), settings.max_resources, deadline, tally),
            )
            records, truncated = listed.records, len(listed.records) >= settings.max_resources
        else:
            namespaces = source.namespaces
            if namespaces is None or uses_cluster_wide_list(namespaces.include, namespaces.exclude, True):
                records, truncated = self._cluster_wide(client, source, resource, deadline, tally)
            else:
                records, truncated = self._per_namespace(client, source, resource, deadline, errors, tally)
        collection = CustomResourceCollection(
            source_id=compiled.source_id,
            cluster_name=target.name,
            collected_at=started_at,
            resource_count=len(records),
            truncated=truncated,
            duration_ms=int((time.monotonic() - started) * 1000),
            resources=tuple(records),
        )
        aggregations = self.aggregate(records, tally)
        errors += [failure.describe() for failure in tally.failures()]
        return ClusterResult(collection, aggregations, tuple(errors), tuple(tally.failures()))

    # ------------------------------------------------------------------ strategies

    def _cluster_wide(
        self,
        client: KubeClient,
        source: CompiledSource,
        resource: str,
        deadline: Deadline,
        tally: FailureTally | None = None,
    ) -> tuple[list[CollectedResource], bool]:
        """One cluster-wide list, capped, then post-filtered by namespace when a selector exists."""
        max_resources = self.program.compiled.collection.max_resources
        listed = self._wrap(
            "failed to collect resources",
            lambda: self._list(client, _path(source, resource), max_resources, deadline, tally),
        )
        records = listed.records
        if source.namespaces is not None:
            keep = set(self._namespaces(client, deadline))
            records = [r for r in records if r.namespace in keep]
        return records, len(records) >= max_resources

    def _per_namespace(
        self,
        client: KubeClient,
        source: CompiledSource,
        resource: str,
        deadline: Deadline,
        errors: list[str],
        tally: FailureTally | None = None,
    ) -> tuple[list[CollectedResource], bool]:
        """One list per selected namespace, ``parallelism`` at a time, each capped by what is left."""
        settings = self.program.compiled.collection
        max_resources = settings.max_resources
        records: list[CollectedResource] = []
        truncated = False
        running: dict[Future[_Listed], str] = {}

        def absorb(done: set[Future[_Listed]]) -> None:
            for future in done:
                namespace = running.pop(future)
                try:
                    records.extend(future.result().records)
                except Exception as exc:
                    errors.append(f"namespace {namespace}: failed to list resources: {exc}")

        pool = ThreadPoolExecutor(max_workers=settings.parallelism, thread_name_prefix="metricsource-ns")
        try:
            for namespace in self._namespaces(client, deadline):
                while len(running) >= settings.parallelism:
                    done, _ = wait(running, timeout=deadline.remaining(), return_when=FIRST_COMPLETED)
                    if not done:
                        raise DeadlineExceededError()
                    absorb(done)
                if len(records) >= max_resources:
                    truncated = True
                    break
                cap = max_resources - len(records)
                future = pool.submit(self._list, client, _path(source, resource, namespace), cap, deadline, tally)
                running[future] = namespace
            while running:
                done, _ = wait(running, timeout=deadline.remaining(), return_when=FIRST_COMPLETED)
                if not done:
                    raise DeadlineExceededError()
                absorb(done)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if len(records) > max_resources:
            del records[max_resources:]
            truncated = True
        return records, truncated

    def records_of_page(
        self, body: bytes, limit: int | None = None, tally: FailureTally | None = None
    ) -> list[CollectedResource]:
        """The records of one raw list page (at most ``limit``), decoding only what the paths read."""
        with no_gc():
            items = self._decoder.decode(body).items or ()
            if limit is not None:
                items = items[:limit]
            record = self.program.record
            return [record(item, tally) for item in items]

    # ------------------------------------------------------------------ calls

    def _list(
        self, client: KubeClient, path: str, cap: int, deadline: Deadline, tally: FailureTally | None = None
    ) -> _Listed:
        """Page through ``path`` until no ``continue`` token or ``cap`` records."""
        compiled = self.program.compiled
        records: list[CollectedResource] = []
        query: dict[str, Any] = {}
        if compiled.source.label_selector:
            query["labelSelector"] = compiled.source.label_selector
        pages = client.list_pages(path, limit=compiled.collection.batch_size, timeout=deadline.timeout(client), **query)
        try:
            for body in pages:
                records.extend(self.records_of_page(body, cap - len(records), tally))
                if len(records) >= cap:
                    return _Listed(records, True)
                deadline.timeout(client)  # raises once the deadline has passed
        finally:
            close = getattr(pages, "close", None)  # stop the page generator (no further requests)
            if close is not None:
                close()
        return _Listed(records, False)

    def _namespaces(self, client: KubeClient, deadline: Deadline) -> list[str]:
        """The names of the namespaces the source's patterns select, in list order."""

        def names() -> list[str]:
            found = []
            for body in client.list_pages(
                "/api/v1/namespaces", limit=NAMESPACE_PAGE_SIZE, timeout=deadline.timeout(client)
            ):
                for item in _namespace_page.decode(body).items or ():
                    found.append(item.metadata.name)
                deadline.timeout(client)
            return found

        try:
            listed = names()
        except CollectionError:
            raise
        except (KubeApiError, CircuitOpenError, msgspec.DecodeError) as exc:
            raise CollectionError(f"failed to resolve namespaces: failed to list namespaces: {exc}") from exc
        selector = self.program.namespace_filter
        return selector.select(listed) if selector is not None else listed

    def _resource_name(self, client: KubeClient, source: CompiledSource, deadline: Deadline) -> str:
        """The plural from the cluster's API discovery (M7), else the compiled fallback."""
        discovered = self.discovery.resource_for(
            client, source.group, source.version, source.kind, timeout=deadline.timeout(client)
        )
        return discovered or source.resource

    @staticmethod
    def _wrap(prefix: str, call: Callable[[], _Listed]) -> _Listed:
        try:
            return call()
        except (KubeApiError, CircuitOpenError, msgspec.DecodeError, CollectionError) as exc:
            raise CollectionError(f"{prefix}: {exc}") from exc

    def aggregate(
        self, records: Sequence[CollectedResource], tally: FailureTally | None = None
    ) -> AggregationResults | None:
        """The source's aggregations over ``records`` (``None`` when it declares none).

        The one aggregation path: a pull collection and a pushed batch's resources both go
        through it, so grouped results and every aggregation type are the same either way.
        """
        if not self.program.compiled.aggregations:
            return None
        started = time.monotonic()
        values = self.program.aggregate(records, tally)
        return AggregationResults(
            source_id=self.program.source_id,
            computed_at=utcnow(),
            duration_ms=int((time.monotonic() - started) * 1000),
            values=values,
        )


def _path(source: CompiledSource, resource: str, namespace: str | None = None) -> str:
    """The list path of the source's resource, cluster-wide or in one namespace."""
    base = f"/apis/{source.group}/{source.version}" if source.group else f"/api/{source.version}"
    if namespace is not None:
        base += f"/namespaces/{namespace}"
    return f"{base}/{resource}"


class _NamespaceMeta(msgspec.Struct, gc=False):
    name: str = ""


class _Namespace(msgspec.Struct, gc=False):
    metadata: _NamespaceMeta = msgspec.field(default_factory=_NamespaceMeta)


class _NamespacePage(msgspec.Struct, gc=False):
    items: list[_Namespace] | None = None


_namespace_page = msgspec.json.Decoder(_NamespacePage)
