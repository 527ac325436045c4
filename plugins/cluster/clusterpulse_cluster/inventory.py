"""The node pass: nodes, their pods, namespaces and object counts in one paginated sweep.

One critical collector produces the NodesPiece, the ClusterMetricsPiece (the 24 totals of
docs/compatibility.md#r1) and the NamespacesPiece (docs/compatibility.md#c2) from a single listing of nodes and pods;
deployments, services, statefulsets, daemonsets and PVCs are counted without being listed.
Pages are decoded with typed partial decoders and dropped as soon as they are tallied, so
memory is bounded by the page size, not the cluster size. Counts are bounded too: at most
``max_nodes`` nodes and ``max_list_objects`` namespaces are kept (the rest only counted), and
nodes whose name is not a DNS-1123 subdomain are left out; what was left out is reported in
``ClusterTarget.skipped`` (docs/faults.md#count-bounds), and every count stored is of what was
stored. The same pod pages feed the pod summaries of the resource lists
(docs/compatibility.md#r3, :mod:`clusterpulse_cluster.resources`), so a reconcile lists the pods
once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import attrs
from clusterpulse_model import ObjectCounts, PodPhaseCounts, cluster_metrics
from clusterpulse_model.pieces import ClusterMetricsPiece, NamespacesPiece, NodesPiece

from clusterpulse_cluster.nodes import MAX_ANNOTATION_BYTES, PodTally, node_metrics, tally_pods
from clusterpulse_cluster.resources import (
    DAEMONSETS_PATH,
    DEPLOYMENTS_PATH,
    SERVICES_PATH,
    STATEFULSETS_PATH,
    PodSummaries,
    ResourceLists,
)
from clusterpulse_cluster.wire_types import (
    NodeDoc,
    labelled_pod_list_decoder,
    namespace_decoder,
    node_decoder,
    pod_list_decoder,
)
from clusterpulse_core.breaker import CircuitOpenError
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.kube.client import KubeApiError
from clusterpulse_core.limits import INVALID_NAME, Skipped, over_limit
from clusterpulse_core.names import is_dns1123_subdomain
from clusterpulse_core.pieces import Piece

log = logging.getLogger(__name__)

NODES_PATH = "/api/v1/nodes"
PODS_PATH = "/api/v1/pods"
NAMESPACES_PATH = "/api/v1/namespaces"


class NodeListingError(Exception):
    """Listing nodes or pods failed (fails the reconcile)."""


#: Default of ``max_nodes``: the largest cluster Kubernetes supports (its scalability limits).
MAX_NODES = 5000
#: Default of ``max_list_objects``: Kubernetes' scalability threshold for namespaces.
MAX_LIST_OBJECTS = 10_000


def list_nodes(target: ClusterTarget, page_size: int, max_nodes: int = MAX_NODES) -> list[NodeDoc]:
    """The cluster's first ``max_nodes`` nodes with a valid name, page by page; what was left out
    goes to ``target.skipped``."""
    try:
        listed = target.client.list_capped(NODES_PATH, node_decoder.decode, max_nodes, page_size)
    except KubeApiError as exc:
        raise NodeListingError(f"failed to list nodes: {exc}") from exc
    nodes = [doc for doc in listed.items if is_dns1123_subdomain(doc.metadata.name)]
    invalid = len(listed.items) - len(nodes)
    if listed.skipped:
        log.warning("cluster %s: %d nodes, kept the first %d (max_nodes)", target.name, listed.total, max_nodes)
        target.skipped.append(Skipped("nodes", listed.skipped, over_limit("max_nodes", max_nodes), len(nodes)))
    if invalid:
        target.skipped.append(Skipped("nodes", invalid, INVALID_NAME, len(nodes)))
    return nodes


def sweep_pods(
    target: ClusterTarget, page_size: int, summaries: PodSummaries | None = None, nodes: frozenset[str] | None = None
) -> dict[str, PodTally]:
    """Per-node pod counts and requests over every pod of the cluster, page by page.

    With ``summaries``, each page also goes to the resource lists' pod summaries before it is
    dropped (decoded with the pods' labels when those are copied). With ``nodes``, pods bound to
    any other node are tallied together under
    :data:`~clusterpulse_cluster.nodes.OTHER_NODES` (so the tallies stay bounded by
    the nodes kept, and the cluster totals still count every pod).
    """
    labelled = summaries is not None and summaries.include_labels
    decode = (labelled_pod_list_decoder if labelled else pod_list_decoder).decode
    tallies: dict[str, PodTally] = {}
    try:
        for page in target.client.list_decoded(PODS_PATH, decode, limit=page_size):
            pods = page.items or ()
            tally_pods(pods, tallies, nodes)
            if summaries is not None:
                summaries.add(pods)
    except KubeApiError as exc:
        raise NodeListingError(f"failed to list pods: {exc}") from exc
    return tallies


def list_namespaces(target: ClusterTarget, page_size: int, max_namespaces: int = MAX_LIST_OBJECTS) -> list[str]:
    """The first ``max_namespaces`` namespace names in API order (the rest counted in ``target.skipped``);
    an error gives an empty list (docs/compatibility.md#cluster-collection)."""
    try:
        listed = target.client.list_capped(NAMESPACES_PATH, namespace_decoder.decode, max_namespaces, page_size)
    except KubeApiError as exc:
        log.warning("cluster %s: listing namespaces failed: %s", target.name, exc)
        return []
    if listed.skipped:
        target.skipped.append(
            Skipped("namespaces", listed.skipped, over_limit("max_list_objects", max_namespaces), len(listed.items))
        )
    return [ns.metadata.name for ns in listed.items]


#: Cluster-wide counts of docs/compatibility.md#r1: ObjectCounts field -> list path.
COUNTED_PATHS: dict[str, str] = {
    "deployments": DEPLOYMENTS_PATH,
    "services": SERVICES_PATH,
    "statefulsets": STATEFULSETS_PATH,
    "daemonsets": DAEMONSETS_PATH,
    "pvcs": "/api/v1/persistentvolumeclaims",
}


def count_objects(target: ClusterTarget, what: str, path: str) -> int:
    """Objects of one kind in all namespaces, not decoded; 0 when listing fails (docs/compatibility.md#r1)."""
    try:
        return target.client.count(path)
    except (KubeApiError, CircuitOpenError) as exc:
        log.warning("cluster %s: counting %s failed: %s", target.name, what, exc)
        return 0


def object_counts(
    target: ClusterTarget, counted: Sequence[str] = tuple(COUNTED_PATHS), known: Mapping[str, int] | None = None
) -> ObjectCounts:
    """The cluster-wide counts named in ``counted`` (keys of :data:`COUNTED_PATHS`); the others stay 0.

    ``known`` holds counts already taken (from lists read to their end): those are not asked again.
    """
    known = known or {}
    return ObjectCounts(
        **{what: known[what] if what in known else count_objects(target, what, COUNTED_PATHS[what]) for what in counted}
    )


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
    #: Nodes kept per cluster (the rest counted, not stored).
    max_nodes: int = MAX_NODES
    #: Namespaces kept per cluster.
    max_list_objects: int = MAX_LIST_OBJECTS

    def __call__(self, target: ClusterTarget) -> Sequence[Piece]:
        """List nodes and pods (failure fails the reconcile), the resource lists, then namespaces and
        object counts."""
        docs = list_nodes(target, self.page_size, self.max_nodes)
        tallies, resource_lists, listed = self._sweep_pods(target, frozenset(doc.metadata.name for doc in docs))
        now = self.clock()
        nodes = tuple(node_metrics(doc, tallies.get(doc.metadata.name), now, self.max_annotation_bytes) for doc in docs)
        pods = pod_phases(tallies)
        del docs, tallies
        namespaces = list_namespaces(target, self.page_size, self.max_list_objects)
        metrics = cluster_metrics(nodes, namespaces, now, pods, object_counts(target, self.counted, listed))
        return [
            NodesPiece(target.name, nodes),
            ClusterMetricsPiece(target.name, metrics),
            NamespacesPiece(target.name, tuple(namespaces), timestamp=now),
            *resource_lists,
        ]

    def _sweep_pods(
        self, target: ClusterTarget, nodes: frozenset[str]
    ) -> tuple[dict[str, PodTally], list[Piece], dict[str, int]]:
        """The pod tallies of ``nodes``, the resource lists made from the same pod pages (if any),
        and the counts those lists took (of every list read to its end)."""
        if self.resources is None:
            return sweep_pods(target, self.page_size, nodes=nodes), [], {}
        started = time.monotonic()
        summaries = self.resources.pod_summaries()
        tallies = sweep_pods(target, self.page_size, summaries, nodes)
        piece, listed = self.resources.piece(target, summaries, started)
        return tallies, [piece] if piece is not None else [], listed
