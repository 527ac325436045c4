"""The ``resources`` collector: workload lists the ClusterPulse API recounts per user and namespace.

DECISIONS R3 (controllers.md §5.8 as upstream at 73eb0ca, with pods of every phase): pods,
deployments, services, statefulsets and daemonsets of the whole cluster as short summaries,
each list bounded by its cap. A cap that cut a list sets ``truncated``. Lists are read page by
page with typed partial decoders, and never more items than the cap, so a huge cluster costs
no more than a capped one. Any listing failure fails this collector alone (logged; the
reconcile goes on and the previous lists stay until they expire).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs
import msgspec

from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.pieces import (
    DaemonSetSummary,
    DeploymentSummary,
    Piece,
    PodSummary,
    ResourceCollection,
    ResourceCollectionPiece,
    ServiceSummary,
    StatefulSetSummary,
)

PODS_PATH = "/api/v1/pods"
DEPLOYMENTS_PATH = "/apis/apps/v1/deployments"
SERVICES_PATH = "/api/v1/services"
STATEFULSETS_PATH = "/apis/apps/v1/statefulsets"
DAEMONSETS_PATH = "/apis/apps/v1/daemonsets"
#: Upstream reads at most this many daemonsets (there is no setting).
MAX_DAEMONSETS = 100
#: With a non-empty namespace filter, pods in namespaces with this prefix are left out (upstream).
FILTERED_PREFIX = "kube-"


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    labels: dict[str, str] | None = None


class _ListMeta(msgspec.Struct):
    continue_: str = msgspec.field(default="", name="continue")


class _PodSpec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _PodStatus(msgspec.Struct):
    phase: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _PodSpec = msgspec.field(default_factory=_PodSpec)
    status: _PodStatus = msgspec.field(default_factory=_PodStatus)


class _ReplicasSpec(msgspec.Struct):
    replicas: int | None = None


class _ReplicasStatus(msgspec.Struct, rename="camel"):
    ready_replicas: int = 0


class _Replicated(msgspec.Struct):
    """A Deployment or a StatefulSet."""

    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _ReplicasSpec = msgspec.field(default_factory=_ReplicasSpec)
    status: _ReplicasStatus = msgspec.field(default_factory=_ReplicasStatus)


class _ServiceSpec(msgspec.Struct, rename="camel"):
    type: str = ""
    cluster_ip: str = msgspec.field(default="", name="clusterIP")


class _Service(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _ServiceSpec = msgspec.field(default_factory=_ServiceSpec)


class _DaemonSetStatus(msgspec.Struct, rename="camel"):
    desired_number_scheduled: int = 0
    current_number_scheduled: int = 0
    number_ready: int = 0


class _DaemonSet(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    status: _DaemonSetStatus = msgspec.field(default_factory=_DaemonSetStatus)


class _PodPage(msgspec.Struct):
    items: list[_Pod] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _ReplicatedPage(msgspec.Struct):
    items: list[_Replicated] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _ServicePage(msgspec.Struct):
    items: list[_Service] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _DaemonSetPage(msgspec.Struct):
    items: list[_DaemonSet] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {
    _Pod: msgspec.json.Decoder(_PodPage),
    _Replicated: msgspec.json.Decoder(_ReplicatedPage),
    _Service: msgspec.json.Decoder(_ServicePage),
    _DaemonSet: msgspec.json.Decoder(_DaemonSetPage),
}
T = TypeVar("T")


def read_capped(target: ClusterTarget, path: str, kind: type[T], cap: int,
                page_size: int) -> tuple[list[T], bool]:
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


def pod_summaries(pods: Sequence[_Pod], per_namespace: int, namespace_filter: str,
                  include_labels: bool) -> tuple[list[PodSummary], bool]:
    """Pod summaries (every phase) with the per-namespace cap; True when the cap left some out."""
    kept: list[PodSummary] = []
    per_ns: Counter[str] = Counter()
    truncated = False
    for pod in pods:
        namespace = pod.metadata.namespace
        if namespace_filter and namespace.startswith(FILTERED_PREFIX):
            continue
        if per_ns[namespace] >= per_namespace:
            truncated = True
            continue
        per_ns[namespace] += 1
        kept.append(PodSummary(pod.metadata.name, namespace, pod.status.phase, pod.spec.node_name,
                               _labels(pod.metadata, include_labels)))
    return kept, truncated


@attrs.frozen
class ResourceCollector:
    """The non-critical ``resources`` collector of the cluster plugin (DECISIONS R3)."""

    settings: ClusterSettings
    clock: Callable[[], datetime]

    def __call__(self, target: ClusterTarget) -> Sequence[Piece]:
        """One :class:`ResourceCollectionPiece`, or nothing when collection is disabled."""
        if not self.settings.resource_collection_enabled:
            return []
        started = time.monotonic()
        collection = self.collect(target)
        elapsed_ms = int((time.monotonic() - started) * 1000)
        return [ResourceCollectionPiece(target.name, attrs.evolve(collection, collection_time_ms=elapsed_ms))]

    def collect(self, target: ClusterTarget) -> ResourceCollection:
        """Read every list up to its cap and summarise it."""
        settings, page = self.settings, self.settings.page_size
        labels = settings.collect_resource_labels
        truncated = False

        def capped(path: str, kind: type[T], cap: int) -> list[T]:
            nonlocal truncated
            items, cut = read_capped(target, path, kind, cap, page)
            truncated = truncated or cut
            return items

        pods, cut = pod_summaries(capped(PODS_PATH, _Pod, settings.max_total_pods),
                                  settings.max_pods_per_namespace, settings.resource_namespace_filter, labels)
        truncated = truncated or cut
        deployments = [
            DeploymentSummary(d.metadata.name, d.metadata.namespace, d.spec.replicas or 0,
                              d.status.ready_replicas, _labels(d.metadata, labels))
            for d in capped(DEPLOYMENTS_PATH, _Replicated, settings.max_deployments)
        ]
        services = [
            ServiceSummary(s.metadata.name, s.metadata.namespace, s.spec.type, s.spec.cluster_ip,
                           _labels(s.metadata, labels))
            for s in capped(SERVICES_PATH, _Service, settings.max_services)
        ]
        statefulsets = [
            StatefulSetSummary(s.metadata.name, s.metadata.namespace, s.spec.replicas or 0,
                               s.status.ready_replicas, _labels(s.metadata, labels))
            for s in capped(STATEFULSETS_PATH, _Replicated, settings.max_deployments)
        ]
        daemonsets = [
            DaemonSetSummary(d.metadata.name, d.metadata.namespace, d.status.desired_number_scheduled,
                             d.status.current_number_scheduled, d.status.number_ready,
                             _labels(d.metadata, labels))
            for d in capped(DAEMONSETS_PATH, _DaemonSet, MAX_DAEMONSETS)
        ]
        return ResourceCollection(
            timestamp=self.clock(),
            pods=tuple(pods),
            deployments=tuple(deployments),
            services=tuple(services),
            statefulsets=tuple(statefulsets),
            daemonsets=tuple(daemonsets),
            truncated=truncated,
            total_resources=len(pods) + len(deployments) + len(services) + len(statefulsets) + len(daemonsets),
        )
