"""The node pass: nodes, their pods, namespaces and object counts in one paginated sweep.

One critical collector produces the NodesPiece, the ClusterMetricsPiece (the 24 totals of
docs/compatibility.md#r1) and the NamespacesPiece (docs/compatibility.md#c2) from a single listing of nodes and pods;
deployments, services, statefulsets, daemonsets and PVCs are counted without being listed.
Pages are decoded with typed partial decoders and dropped as soon as they are tallied, so
memory is bounded by the page size, not the cluster size. The same pod pages feed the pod
summaries of the resource lists (docs/compatibility.md#r3, :mod:`clusterpulse_cluster.resources`), so a
reconcile lists the pods once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime

import attrs
from clusterpulse_model import ObjectCounts, PodPhaseCounts, cluster_metrics
from clusterpulse_model.pieces import ClusterMetricsPiece, NamespacesPiece, NodesPiece

from clusterpulse_cluster.nodes import MAX_ANNOTATION_BYTES, PodTally, node_metrics, tally_pods
from clusterpulse_cluster.resources import PodSummaries, ResourceLists
from clusterpulse_cluster.wire_types import (
    NodeDoc,
    labelled_pod_list_decoder,
    namespace_list_decoder,
    node_list_decoder,
    pod_list_decoder,
)
from clusterpulse_core.breaker import CircuitOpenError
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.kube.client import KubeApiError
from clusterpulse_core.pieces import Piece

log = logging.getLogger(__name__)

NODES_PATH = "/api/v1/nodes"
PODS_PATH = "/api/v1/pods"
NAMESPACES_PATH = "/api/v1/namespaces"
DEPLOYMENTS_PATH = "/apis/apps/v1/deployments"


class NodeListingError(Exception):
    """Listing nodes or pods failed (fails the reconcile)."""


def list_nodes(target: ClusterTarget, page_size: int) -> list[NodeDoc]:
    """Every node of the cluster, page by page."""
    nodes: list[NodeDoc] = []
    try:
        for page in target.client.list_decoded(NODES_PATH, node_list_decoder.decode, limit=page_size):
            nodes.extend(page.items or ())
    except KubeApiError as exc:
        raise NodeListingError(f"failed to list nodes: {exc}") from exc
    return nodes


def sweep_pods(target: ClusterTarget, page_size: int, summaries: PodSummaries | None = None) -> dict[str, PodTally]:
    """Per-node pod counts and requests over every pod of the cluster, page by page.

    With ``summaries``, each page also goes to the resource lists' pod summaries before it is
    dropped (decoded with the pods' labels when those are copied).
    """
    labelled = summaries is not None and summaries.include_labels
    decode = (labelled_pod_list_decoder if labelled else pod_list_decoder).decode
    tallies: dict[str, PodTally] = {}
    try:
        for page in target.client.list_decoded(PODS_PATH, decode, limit=page_size):
            pods = page.items or ()
            tally_pods(pods, tallies)
            if summaries is not None:
                summaries.add(pods)
    except KubeApiError as exc:
        raise NodeListingError(f"failed to list pods: {exc}") from exc
    return tallies


def list_namespaces(target: ClusterTarget, page_size: int) -> list[str]:
    """Namespace names in API order; an error gives an empty list (docs/compatibility.md#cluster-collection)."""
    names: list[str] = []
    try:
        for page in target.client.list_decoded(NAMESPACES_PATH, namespace_list_decoder.decode, limit=page_size):
            names.extend(ns.metadata.name for ns in page.items or ())
    except KubeApiError as exc:
        log.warning("cluster %s: listing namespaces failed: %s", target.name, exc)
        return []
    return names


#: Cluster-wide counts of docs/compatibility.md#r1: ObjectCounts field -> list path.
COUNTED_PATHS: dict[str, str] = {
    "deployments": DEPLOYMENTS_PATH,
    "services": "/api/v1/services",
    "statefulsets": "/apis/apps/v1/statefulsets",
    "daemonsets": "/apis/apps/v1/daemonsets",
    "pvcs": "/api/v1/persistentvolumeclaims",
}


def count_objects(target: ClusterTarget, what: str, path: str) -> int:
    """Objects of one kind in all namespaces, not decoded; 0 when listing fails (docs/compatibility.md#r1)."""
    try:
        return target.client.count(path)
    except (KubeApiError, CircuitOpenError) as exc:
        log.warning("cluster %s: counting %s failed: %s", target.name, what, exc)
        return 0


def object_counts(target: ClusterTarget, counted: Sequence[str] = tuple(COUNTED_PATHS)) -> ObjectCounts:
    """The cluster-wide counts named in ``counted`` (keys of :data:`COUNTED_PATHS`); the others stay 0."""
    return ObjectCounts(**{what: count_objects(target, what, COUNTED_PATHS[what]) for what in counted})


def pod_phases(tallies: dict[str, PodTally]) -> PodPhaseCounts:
    """Every pod of the cluster by phase, bound to a node or not."""
    return PodPhaseCounts(
        total=sum(t.total for t in tallies.values()),
        running=sum(t.running for t in tallies.values()),
        pending=sum(t.pending for t in tallies.values()),
        failed=sum(t.failed for t in tallies.values()),
    )


@attrs.frozen
class InventoryCollector:
    """The critical ``nodes`` collector: node metrics, cluster metrics and namespaces.

    With ``resources``, also the resource lists (docs/compatibility.md#r3), their pods from the same pod
    sweep; a failure of their other lists leaves them out and fails nothing.
    """

    page_size: int
    clock: Callable[[], datetime]
    max_annotation_bytes: int = MAX_ANNOTATION_BYTES
    #: Which cluster-wide counts to take (the push agent takes only those its batch can carry).
    counted: tuple[str, ...] = tuple(COUNTED_PATHS)
    #: The resource lists to make during the pass (None: not collected, as in the push agent).
    resources: ResourceLists | None = None

    def __call__(self, target: ClusterTarget) -> Sequence[Piece]:
        """List nodes and pods (failure fails the reconcile), the resource lists, then namespaces and
        object counts."""
        docs = list_nodes(target, self.page_size)
        tallies, resource_lists = self._sweep_pods(target)
        now = self.clock()
        nodes = tuple(node_metrics(doc, tallies.get(doc.metadata.name) if doc.metadata.name else None, now,
                                   self.max_annotation_bytes)
                      for doc in docs)
        pods = pod_phases(tallies)
        del docs, tallies
        namespaces = list_namespaces(target, self.page_size)
        metrics = cluster_metrics(nodes, namespaces, now, pods, object_counts(target, self.counted))
        return [
            NodesPiece(target.name, nodes),
            ClusterMetricsPiece(target.name, metrics),
            NamespacesPiece(target.name, tuple(namespaces), timestamp=now),
            *resource_lists,
        ]

    def _sweep_pods(self, target: ClusterTarget) -> tuple[dict[str, PodTally], list[Piece]]:
        """The pod tallies, and the resource lists made from the same pod pages (if any)."""
        if self.resources is None:
            return sweep_pods(target, self.page_size), []
        started = time.monotonic()
        summaries = self.resources.pod_summaries()
        tallies = sweep_pods(target, self.page_size, summaries)
        piece = self.resources.piece(target, summaries, started)
        return tallies, [piece] if piece is not None else []
