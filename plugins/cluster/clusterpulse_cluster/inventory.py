"""The node pass: nodes, their pods, namespaces and deployments in one paginated sweep.

One critical collector produces the NodesPiece, the ClusterMetricsPiece and the
NamespacesPiece (DECISIONS C2) from a single listing of nodes and pods. Pages are decoded
with typed partial decoders and dropped as soon as they are tallied, so memory is bounded
by the page size, not the cluster size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

import attrs

from clusterpulse_cluster.nodes import PodTally, node_metrics, tally_pods
from clusterpulse_cluster.wire_types import (
    NodeDoc,
    counted_list_decoder,
    namespace_list_decoder,
    node_list_decoder,
    pod_list_decoder,
)
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.kube.client import KubeApiError
from clusterpulse_core.model import ClusterMetrics, NodeMetrics, NodeStatus
from clusterpulse_core.pieces import ClusterMetricsPiece, NamespacesPiece, NodesPiece, Piece

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


def tally_cluster_pods(target: ClusterTarget, page_size: int) -> dict[str, PodTally]:
    """Per-node pod counts and requests over every pod of the cluster, page by page."""
    tallies: dict[str, PodTally] = {}
    try:
        for page in target.client.list_decoded(PODS_PATH, pod_list_decoder.decode, limit=page_size):
            tally_pods(page.items or (), tallies)
    except KubeApiError as exc:
        raise NodeListingError(f"failed to list pods: {exc}") from exc
    return tallies


def list_namespaces(target: ClusterTarget, page_size: int) -> list[str]:
    """Namespace names in API order; an error gives an empty list (controllers.md §5.4)."""
    names: list[str] = []
    try:
        for page in target.client.list_decoded(NAMESPACES_PATH, namespace_list_decoder.decode, limit=page_size):
            names.extend(ns.metadata.name for ns in page.items or ())
    except KubeApiError as exc:
        log.warning("cluster %s: listing namespaces failed: %s", target.name, exc)
        return []
    return names


def count_deployments(target: ClusterTarget, page_size: int) -> int:
    """Deployments in all namespaces; 0 when listing fails (controllers.md §5.4)."""
    count = 0
    try:
        for page in target.client.list_decoded(DEPLOYMENTS_PATH, counted_list_decoder.decode, limit=page_size):
            count += len(page.items or ())
    except KubeApiError as exc:
        log.warning("cluster %s: counting deployments failed: %s", target.name, exc)
        return 0
    return count


def cluster_metrics(nodes: Sequence[NodeMetrics], namespaces: Sequence[str], deployments: int,
                    now: datetime) -> ClusterMetrics:
    """Cluster totals from node metrics (collector.proto.md §4.2)."""
    return ClusterMetrics(
        timestamp=now,
        nodes=len(nodes),
        nodes_ready=sum(1 for node in nodes if node.status == NodeStatus.READY.value),
        namespaces=len(namespaces),
        namespace_list=tuple(namespaces),
        pods=sum(node.pods_total for node in nodes),
        pods_running=sum(node.pods_running for node in nodes),
        cpu_capacity=sum((node.cpu_capacity for node in nodes), 0.0),
        memory_capacity=sum(node.memory_capacity for node in nodes),
        deployments=deployments,
    )


@attrs.frozen
class InventoryCollector:
    """The critical ``nodes`` collector: node metrics, cluster metrics and namespaces."""

    page_size: int
    clock: Callable[[], datetime]

    def __call__(self, target: ClusterTarget) -> Sequence[Piece]:
        """List nodes and pods (failure fails the reconcile), then namespaces and deployments."""
        docs = list_nodes(target, self.page_size)
        tallies = tally_cluster_pods(target, self.page_size)
        now = self.clock()
        nodes = tuple(node_metrics(doc, tallies.get(doc.metadata.name), now) for doc in docs)
        del docs, tallies
        namespaces = list_namespaces(target, self.page_size)
        metrics = cluster_metrics(nodes, namespaces, count_deployments(target, self.page_size), now)
        return [
            NodesPiece(target.name, nodes),
            ClusterMetricsPiece(target.name, metrics),
            NamespacesPiece(target.name, tuple(namespaces), timestamp=now),
        ]
