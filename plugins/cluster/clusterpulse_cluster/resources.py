"""The workload lists the ClusterPulse API recounts per user and namespace (docs/compatibility.md#r3).

docs/compatibility.md#r3 (as the Go controller at 73eb0ca, with pods of every phase): pods,
deployments, services, statefulsets and daemonsets of the whole cluster as short summaries,
each list bounded by its cap. A cap that cut a list sets ``truncated``.

The pods are not listed here: the critical ``nodes`` collector already reads every pod page
for its tallies, and :class:`PodSummaries` takes the summaries from those same pages as they
pass (so a reconcile lists the pods once). The other lists are read page by page with typed
partial decoders, and never more items than the cap, so a huge cluster costs no more than a
capped one. A failure of those lists fails the resource lists alone (logged; the reconcile goes
on and the previous lists stay until they expire).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs
import msgspec
from clusterpulse_model.pieces import (
    DaemonSetSummary,
    DeploymentSummary,
    PodSummary,
    ResourceCollection,
    ResourceCollectionPiece,
    ServiceSummary,
    StatefulSetSummary,
)

from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_cluster.wire_types import LabelledPodMeta, PodDoc
from clusterpulse_core.collect import ClusterTarget

log = logging.getLogger(__name__)

DEPLOYMENTS_PATH = "/apis/apps/v1/deployments"
SERVICES_PATH = "/api/v1/services"
STATEFULSETS_PATH = "/apis/apps/v1/statefulsets"
DAEMONSETS_PATH = "/apis/apps/v1/daemonsets"
#: The cluster-wide count (docs/compatibility.md#r1) that a list read to its end gives, by list path.
LISTED_COUNTS = {
    DEPLOYMENTS_PATH: "deployments",
    SERVICES_PATH: "services",
    STATEFULSETS_PATH: "statefulsets",
    DAEMONSETS_PATH: "daemonsets",
}
#: Upstream reads at most this many daemonsets (there is no setting).
MAX_DAEMONSETS = 100
#: With a non-empty namespace filter, pods in namespaces with this prefix are left out (upstream).
FILTERED_PREFIX = "kube-"


class _Meta(msgspec.Struct, gc=False):
    name: str = ""
    namespace: str = ""
    labels: dict[str, str] | None = None


class _ListMeta(msgspec.Struct, gc=False):
    continue_: str = msgspec.field(default="", name="continue")


class _ReplicasSpec(msgspec.Struct, gc=False):
    replicas: int | None = None


class _ReplicasStatus(msgspec.Struct, rename="camel", gc=False):
    ready_replicas: int = 0


class _Replicated(msgspec.Struct, gc=False):
    """A Deployment or a StatefulSet."""

    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _ReplicasSpec = msgspec.field(default_factory=_ReplicasSpec)
    status: _ReplicasStatus = msgspec.field(default_factory=_ReplicasStatus)


class _ServiceSpec(msgspec.Struct, rename="camel", gc=False):
    type: str = ""
    cluster_ip: str = msgspec.field(default="", name="clusterIP")


class _Service(msgspec.Struct, gc=False):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _ServiceSpec = msgspec.field(default_factory=_ServiceSpec)


class _DaemonSetStatus(msgspec.Struct, rename="camel", gc=False):
    desired_number_scheduled: int = 0
    current_number_scheduled: int = 0
    number_ready: int = 0


class _DaemonSet(msgspec.Struct, gc=False):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    status: _DaemonSetStatus = msgspec.field(default_factory=_DaemonSetStatus)


class _ReplicatedPage(msgspec.Struct, gc=False):
    items: list[_Replicated] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _ServicePage(msgspec.Struct, gc=False):
    items: list[_Service] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _DaemonSetPage(msgspec.Struct, gc=False):
    items: list[_DaemonSet] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {
    _Replicated: msgspec.json.Decoder(_ReplicatedPage),
    _Service: msgspec.json.Decoder(_ServicePage),
    _DaemonSet: msgspec.json.Decoder(_DaemonSetPage),
}
T = TypeVar("T")


def read_capped(target: ClusterTarget, path: str, kind: type[T], cap: int, page_size: int) -> tuple[list[T], bool]:
    """At most ``cap`` decoded items of a list, read page by page; True when the list had more."""
    decoder = _DECODERS[kind]
    items: list[T] = []
    token = ""
    while len(items) < cap:
        query: dict[str, Any] = {"limit": min(page_size, cap - len(items))}
        if token:
            query["continue"] = token
        page = decoder.decode(target.client.get_bytes(path, **query))
        items.extend(page.items or ())
        token = page.metadata.continue_
        if not token:
            return items, False
    return items[:cap], True


def _labels(meta: _Meta, include: bool) -> dict[str, str]:
    return dict(meta.labels or {}) if include else {}


@attrs.define
class PodSummaries:
    """The pod list of a resource collection, taken from the pod pages as they are swept.

    The first ``max_total`` pods in API order are considered (every phase; the cap counts the
    pods the namespace filter leaves out too, as upstream's capped listing did); of those, at
    most ``per_namespace`` per namespace are kept. ``truncated`` is set when the cluster has more
    pods than ``max_total`` or a namespace had more than ``per_namespace``. Memory is bounded by
    the caps, whatever the cluster's size.
    """

    max_total: int
    per_namespace: int
    namespace_filter: str = ""
    include_labels: bool = False
    pods: list[PodSummary] = attrs.field(factory=list, init=False)
    truncated: bool = attrs.field(default=False, init=False)
    _seen: int = attrs.field(default=0, init=False)
    _kept: dict[str, int] = attrs.field(factory=dict, init=False)

    @classmethod
    def from_settings(cls, settings: ClusterSettings) -> PodSummaries:
        """Empty summaries with the caps, filter and label choice of ``settings``."""
        return cls(
            settings.max_total_pods,
            settings.max_pods_per_namespace,
            settings.resource_namespace_filter,
            settings.collect_resource_labels,
        )

    def add(self, pods: Sequence[PodDoc]) -> None:
        """Summarise the next pods of the listing (with ``include_labels``, pods decoded with their labels)."""
        room = self.max_total - self._seen
        if len(pods) > room:
            self.truncated = True
            pods = pods[: max(room, 0)]
        self._seen += len(pods)
        # Once per pod of every reconcile: locals only, one summary made per pod kept.
        kept, per_namespace, append = self._kept, self.per_namespace, self.pods.append
        skip_prefix = bool(self.namespace_filter)
        with_labels = self.include_labels
        summary = PodSummary
        for pod in pods:
            meta = pod.metadata
            namespace = meta.namespace
            if skip_prefix and namespace.startswith(FILTERED_PREFIX):
                continue
            count = kept.get(namespace, 0)
            if count >= per_namespace:
                self.truncated = True
                continue
            kept[namespace] = count + 1
            labels = dict(meta.labels or {}) if with_labels and isinstance(meta, LabelledPodMeta) else {}
            append(summary(meta.name, namespace, pod.status.phase, pod.spec.node_name, labels))


@attrs.frozen
class ResourceLists:
    """The resource lists of docs/compatibility.md#r3, made during the ``nodes`` collector's pass.

    The collector gives :meth:`pod_summaries` to its pod sweep, then asks :meth:`piece` for
    the collection: that reads the deployments, services, statefulsets and daemonsets and never
    fails the reconcile.
    """

    settings: ClusterSettings
    clock: Callable[[], datetime]

    def pod_summaries(self) -> PodSummaries:
        """Empty pod summaries for the next pod sweep."""
        return PodSummaries.from_settings(self.settings)

    def piece(
        self, target: ClusterTarget, pods: PodSummaries, started: float
    ) -> tuple[ResourceCollectionPiece | None, dict[str, int]]:
        """The collection (``collection_time_ms`` counted from ``started``, a ``time.monotonic()``
        taken before the pod sweep), None (logged) when a list could not be read; and the
        cluster-wide count of each list read to its end (see :meth:`collect`)."""
        try:
            collection, complete = self.collect(target, pods)
        except Exception as exc:  # any failure here stays here: the reconcile goes on without the lists
            log.warning("cluster %s: the resource lists failed: %s", target.name, exc)
            return None, {}
        elapsed_ms = int((time.monotonic() - started) * 1000)
        return ResourceCollectionPiece(target.name, attrs.evolve(collection, collection_time_ms=elapsed_ms)), complete

    def collect(self, target: ClusterTarget, pods: PodSummaries) -> tuple[ResourceCollection, dict[str, int]]:
        """Read every other list up to its cap and summarise it, with the swept ``pods``.

        Also returns how many objects each list the cap did not cut holds, by its cluster-wide
        count name (``deployments``, ``services``, ``statefulsets``, ``daemonsets``): the whole
        list was read, so the count needs no call of its own (docs/compatibility.md#r1).
        """
        settings, page = self.settings, self.settings.page_size
        labels = settings.collect_resource_labels
        truncated = pods.truncated
        complete: dict[str, int] = {}

        def capped(path: str, kind: type[T], cap: int) -> list[T]:
            nonlocal truncated
            items, cut = read_capped(target, path, kind, cap, page)
            truncated = truncated or cut
            if not cut:
                complete[LISTED_COUNTS[path]] = len(items)
            return items

        deployments = [
            DeploymentSummary(
                d.metadata.name,
                d.metadata.namespace,
                d.spec.replicas or 0,
                d.status.ready_replicas,
                _labels(d.metadata, labels),
            )
            for d in capped(DEPLOYMENTS_PATH, _Replicated, settings.max_deployments)
        ]
        services = [
            ServiceSummary(
                s.metadata.name, s.metadata.namespace, s.spec.type, s.spec.cluster_ip, _labels(s.metadata, labels)
            )
            for s in capped(SERVICES_PATH, _Service, settings.max_services)
        ]
        statefulsets = [
            StatefulSetSummary(
                s.metadata.name,
                s.metadata.namespace,
                s.spec.replicas or 0,
                s.status.ready_replicas,
                _labels(s.metadata, labels),
            )
            for s in capped(STATEFULSETS_PATH, _Replicated, settings.max_deployments)
        ]
        daemonsets = [
            DaemonSetSummary(
                d.metadata.name,
                d.metadata.namespace,
                d.status.desired_number_scheduled,
                d.status.current_number_scheduled,
                d.status.number_ready,
                _labels(d.metadata, labels),
            )
            for d in capped(DAEMONSETS_PATH, _DaemonSet, MAX_DAEMONSETS)
        ]
        collection = ResourceCollection(
            timestamp=self.clock(),
            pods=tuple(pods.pods),
            deployments=tuple(deployments),
            services=tuple(services),
            statefulsets=tuple(statefulsets),
            daemonsets=tuple(daemonsets),
            truncated=truncated,
            total_resources=len(pods.pods) + len(deployments) + len(services) + len(statefulsets) + len(daemonsets),
        )
        return collection, complete
