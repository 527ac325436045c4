"""MetricsBatch <-> pieces: the one place push data changes shape (docs/compatibility.md#collector-protocol).

The agent turns the pieces its collectors return into a ``MetricsBatch``; the ingester turns
a batch back into the same pieces a pull reconcile stores, so every storage backend handles
push data without knowing it came by push. What the proto cannot carry (node conditions,
taints, annotations, external IP, image and volume counts, extra cluster-info keys) is lost on
the way, as upstream.
"""

from __future__ import annotations

import json
import math
import operator
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import attrs
from clusterpulse_model import (
    AgentStatus,
    AggregationResults,
    ClusterMetrics,
    ClusterOperatorCondition,
    ClusterOperatorInfo,
    ClusterOperatorVersion,
    ClusterStatusRecord,
    CollectedResource,
    CustomResourceCollection,
    Health,
    HealthVerdict,
    NodeCondition,
    NodeMetrics,
    NodeStatus,
    OperatorInfo,
    RelatedObject,
)
from clusterpulse_model.cluster import HEALTHY_MESSAGE, cluster_health, cordoned_ready, usage_percent
from clusterpulse_model.pieces import (
    AggregationsPiece,
    ClusterInfoPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    ClusterStatusPiece,
    CustomResourcesPiece,
    EventPiece,
    NamespacesPiece,
    NodesPiece,
    OperatorsPiece,
    ResourceCollection,
    ResourceCollectionPiece,
)

from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.limits import INVALID_NAME, Skipped, describe, merged, over_limit
from clusterpulse_core.names import is_dns1123_subdomain
from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import dumps, loads, structure
from clusterpulse_ingester.proto import collector_pb2 as pb

#: A ``collected_at`` further in the future than this is not trusted; the receipt time is used.
MAX_CLOCK_SKEW = timedelta(minutes=5)
_INFO_OPTIONAL = ("console_url", "channel", "cluster_id")
T = TypeVar("T")


class BatchError(ValueError):
    """A batch that cannot be stored as sent; the message names the field."""


@attrs.frozen
class BatchLimits:
    """Count bounds of one pushed batch (docs/faults.md#count-bounds): nodes stored, and items of any
    other list (namespaces, operators, ClusterOperators, each MetricSource's resources, each
    resource list). Past them the batch is stored truncated and the truncation reported."""

    max_nodes: int = 5000
    max_objects: int = 10_000


# --------------------------------------------------------------------------- small conversions


def to_float64(value: Any) -> tuple[float, bool]:
    """An aggregation result as a proto double: numbers convert, anything else is ``(0.0, False)``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0, False
    return float(value), True


def cluster_info_map(info: pb.ClusterInfo, endpoint: str = "") -> dict[str, Any]:
    """The stored cluster-info map of a pushed ClusterInfo (``api_url``/``version``/``platform`` always).

    An agent that sends no ``api_url`` (ours reaches its API server in-cluster) gets ``endpoint``,
    its ClusterConnection's ``spec.endpoint``, as a pull reconcile stores it.
    """
    out: dict[str, Any] = {"api_url": info.api_url or endpoint, "version": info.version, "platform": info.platform}
    for key in _INFO_OPTIONAL:
        value = getattr(info, key)
        if value:
            out[key] = value
    return out


def timestamp_of(dt: datetime) -> Any:
    """A proto Timestamp of an aware datetime."""
    from google.protobuf.timestamp_pb2 import Timestamp

    ts = Timestamp()
    ts.FromDatetime(dt.astimezone(UTC))
    return ts


def batch_time(batch: pb.MetricsBatch, received: datetime) -> datetime:
    """When the batch was collected: its ``collected_at``, or the receipt time when unset or implausible."""
    if not batch.HasField("collected_at"):
        return received
    collected = batch.collected_at.ToDatetime(tzinfo=UTC)
    if collected.year < 2000 or collected - received > MAX_CLOCK_SKEW:
        return received
    return collected


#: NodeMetrics fields from ``cpu_capacity`` to ``architecture``, in the model's order: the proto
#: carries each under the same name and type, so they are read in one C call per node.
NODE_FIELDS = (
    "cpu_capacity",
    "memory_capacity",
    "storage_capacity",
    "pods_capacity",
    "cpu_allocatable",
    "memory_allocatable",
    "storage_allocatable",
    "pods_allocatable",
    "cpu_requested",
    "memory_requested",
    "cpu_usage_percent",
    "memory_usage_percent",
    "pods_running",
    "pods_pending",
    "pods_failed",
    "pods_succeeded",
    "pods_total",
    "kernel_version",
    "os_image",
    "container_runtime",
    "kubelet_version",
    "architecture",
)
_node_fields = operator.attrgetter(*NODE_FIELDS)
#: The proto's NodeMetrics fields that are NodeMetrics fields of the same name and type.
_PROTO_NODE_FIELDS = ("name", "status", *NODE_FIELDS, "internal_ip", "hostname")
_proto_node_values = operator.attrgetter(*_PROTO_NODE_FIELDS)


# --------------------------------------------------------------------------- agent: pieces -> batch


def _add_node(nodes: Any, node: NodeMetrics) -> None:
    # Built in place in the batch's repeated field (no copy), values read in one C call.
    nodes.add(
        roles=node.roles, labels=node.labels, **dict(zip(_PROTO_NODE_FIELDS, _proto_node_values(node), strict=True))
    )


def _add_node_extension(nodes: Any, node: NodeMetrics) -> None:
    # The protocol extension (docs/push-mode.md#protocol-extension): conditions and creation time.
    ext = nodes.add(
        name=node.name,
        conditions=[
            pb.ExtensionNodeCondition(type=c.type, status=c.status, reason=c.reason, message=c.message)
            for c in node.conditions
        ],
    )
    for sent, condition in zip(ext.conditions, node.conditions, strict=True):
        if condition.last_transition_time != ZERO_TIME:
            sent.last_transition_time.CopyFrom(timestamp_of(condition.last_transition_time))
    if node.creation_timestamp is not None:
        ext.creation_timestamp.CopyFrom(timestamp_of(node.creation_timestamp))


def _metrics_proto(metrics: ClusterMetrics) -> pb.ClusterMetrics:
    return pb.ClusterMetrics(
        nodes=metrics.nodes,
        nodes_ready=metrics.nodes_ready,
        namespaces=metrics.namespaces,
        namespace_list=list(metrics.namespace_list),
        pods=metrics.pods,
        pods_running=metrics.pods_running,
        cpu_capacity=metrics.cpu_capacity,
        memory_capacity=metrics.memory_capacity,
        deployments=metrics.deployments,
    )


def operator_proto(op: OperatorInfo) -> pb.OperatorInfo:
    """One OLM operator as the agent sends it."""
    return pb.OperatorInfo(
        name=op.name,
        display_name=op.display_name,
        version=op.version,
        status=op.status,
        installed_namespace=op.installed_namespace,
        install_mode=op.install_mode,
        provider=op.provider,
        is_cluster_wide=op.is_cluster_wide,
        install_modes=list(op.install_modes),
        available_in_namespaces=list(op.available_in_namespaces),
        available_count=op.available_count or len(op.available_in_namespaces),
        subscription=dict(op.subscription),
    )


def _cluster_operator_proto(co: ClusterOperatorInfo) -> pb.ClusterOperatorInfo:
    return pb.ClusterOperatorInfo(
        name=co.name,
        version=co.version,
        available=co.available,
        progressing=co.progressing,
        degraded=co.degraded,
        upgradeable=co.upgradeable,
        message=co.message,
        reason=co.reason,
        conditions=[
            pb.ClusterOperatorCondition(type=c.type, status=c.status, reason=c.reason, message=c.message)
            for c in co.conditions
        ],
        versions=[pb.ClusterOperatorVersion(name=v.name, version=v.version) for v in co.versions],
        related_objects=[
            pb.RelatedObject(group=r.group, resource=r.resource, namespace=r.namespace, name=r.name)
            for r in co.related_objects
        ],
    )


def _info_proto(info: Mapping[str, Any]) -> pb.ClusterInfo:
    def text(key: str) -> str:
        value = info.get(key)
        return value if isinstance(value, str) else ""

    # api_url stays empty: the agent reaches its API server in-cluster; the hub stores the
    # ClusterConnection's spec.endpoint instead (see cluster_info_map).
    return pb.ClusterInfo(
        version=text("version"),
        platform=text("platform"),
        console_url=text("console_url"),
        channel=text("channel"),
        cluster_id=text("cluster_id"),
    )


def _values_json(values: Mapping[str, Any]) -> bytes:
    def finite(value: Any) -> Any:
        return None if isinstance(value, float) and not math.isfinite(value) else value

    return json.dumps({k: finite(v) for k, v in values.items()}, separators=(",", ":"), default=str).encode()


def batch_from_pieces(
    cluster: str, pieces: Sequence[Piece], collected_at: datetime, batch_id: str | None = None
) -> pb.MetricsBatch:
    """The MetricsBatch of one agent collection (docs/compatibility.md#collector-protocol); unknown pieces are left
    out."""
    batch = pb.MetricsBatch(cluster_name=cluster, batch_id=batch_id or str(uuid.uuid4()))
    batch.collected_at.CopyFrom(timestamp_of(collected_at))
    customs: dict[str, pb.CustomResourceBatch] = {}
    for piece in pieces:
        if isinstance(piece, NodesPiece):
            for node in piece.nodes:
                _add_node(batch.node_metrics, node)
                _add_node_extension(batch.clusterpulse.nodes, node)
        elif isinstance(piece, ClusterMetricsPiece):
            batch.cluster_metrics.CopyFrom(_metrics_proto(piece.metrics))
            m = piece.metrics
            batch.clusterpulse.counts.CopyFrom(
                pb.ExtensionCounts(
                    services=m.services, statefulsets=m.statefulsets, daemonsets=m.daemonsets, pvcs=m.pvcs
                )
            )
        elif isinstance(piece, ResourceCollectionPiece):
            batch.clusterpulse.resource_collection_json = dumps(piece.collection)
        elif isinstance(piece, ClusterInfoPiece):
            batch.cluster_info.CopyFrom(_info_proto(piece.info))
        elif isinstance(piece, OperatorsPiece):
            batch.operators.extend(operator_proto(op) for op in piece.operators)
        elif isinstance(piece, ClusterOperatorsPiece):
            batch.cluster_operators.extend(_cluster_operator_proto(co) for co in piece.cluster_operators)
        elif isinstance(piece, CustomResourcesPiece):
            c = piece.collection
            entry = customs.setdefault(c.source_id, pb.CustomResourceBatch(source_id=c.source_id))
            entry.resource_count, entry.truncated, entry.duration_ms = c.resource_count, c.truncated, c.duration_ms
            entry.resources.extend(
                pb.CustomCollectedResource(
                    id=r.id,
                    namespace=r.namespace,
                    name=r.name,
                    labels=dict(r.labels),
                    values_json=_values_json(r.values),
                )
                for r in c.resources
            )
        elif isinstance(piece, AggregationsPiece):
            source_id = piece.results.source_id
            entry = customs.setdefault(source_id, pb.CustomResourceBatch(source_id=source_id))
            for key, value in piece.results.values.items():
                number, ok = to_float64(value)
                if ok:
                    entry.aggregation_values[key] = number
    batch.custom_resources.extend(customs.values())
    return batch


# --------------------------------------------------------------------------- ingester: batch -> pieces


_UNKNOWN = NodeStatus.UNKNOWN.value
#: NodeMetrics called positionally with a spread of :data:`NODE_FIELDS` (mypy cannot count it).
_new_node: Callable[..., NodeMetrics] = NodeMetrics


def _node(node: pb.NodeMetrics, at: datetime, index: int) -> NodeMetrics:
    # The ingester's hot path (once per node per batch). The proto guarantees every value's
    # type, so values are taken over as they are, positionally (no keyword matching of 36
    # fields); test_convert checks the order against the model with a distinct value per field.
    name = node.name
    if not name:
        raise BatchError(f"node_metrics[{index}].name: empty node name")
    labels = node.labels
    return _new_node(
        name,
        at,
        node.status or _UNKNOWN,
        tuple(node.roles[:]),
        (),
        *_node_fields(node),
        {key: labels[key] for key in labels},
        {},
        (),
        node.internal_ip,
        "",
        node.hostname,
    )


#: The NodeMetrics fields cluster totals are summed from, read in one C call per node.
_node_totals = operator.attrgetter(
    "pods_pending",
    "pods_failed",
    "cpu_allocatable",
    "cpu_requested",
    "memory_allocatable",
    "memory_requested",
    "storage_capacity",
)


def cluster_metrics_of(metrics: pb.ClusterMetrics, nodes: Sequence[NodeMetrics], at: datetime) -> ClusterMetrics:
    """Cluster totals of a batch (docs/compatibility.md#r1): what the proto carries, the rest from its nodes.

    The same totals as :func:`~clusterpulse_model.cluster.cluster_metrics` of pull mode
    (test_convert checks it), summed in one pass. The proto's own totals win over sums of its
    nodes (they agree for a complete batch). Pending and failed pods are the batch's nodes'
    tallies (unbound pods are not carried); Services, StatefulSets, DaemonSets and PVCs are not
    carried and stay 0.
    """
    pending, failed, cpu_allocatable, cpu_requested, memory_allocatable, memory_requested, storage = [
        sum(column) for column in zip(*map(_node_totals, nodes), strict=True)
    ] or [0, 0, 0.0, 0.0, 0, 0, 0]
    return ClusterMetrics(
        timestamp=at,
        nodes=metrics.nodes,
        nodes_ready=metrics.nodes_ready,
        nodes_not_ready=max(0, metrics.nodes - metrics.nodes_ready),
        namespaces=metrics.namespaces,
        namespace_list=tuple(metrics.namespace_list),
        pods=metrics.pods,
        pods_running=metrics.pods_running,
        pods_pending=pending,
        pods_failed=failed,
        cpu_capacity=metrics.cpu_capacity,
        cpu_allocatable=cpu_allocatable,
        cpu_requested=cpu_requested,
        cpu_usage_percent=usage_percent(cpu_requested, cpu_allocatable),
        memory_capacity=metrics.memory_capacity,
        memory_allocatable=memory_allocatable,
        memory_requested=memory_requested,
        memory_usage_percent=usage_percent(memory_requested, memory_allocatable),
        storage_capacity=storage,
        deployments=metrics.deployments,
        nodes_cordoned=sum(1 for node in nodes if cordoned_ready(node)),
    )


def _with_node_extension(nodes: tuple[NodeMetrics, ...], extensions: Any) -> tuple[NodeMetrics, ...]:
    """Nodes with the conditions and creation times the protocol extension carries (matched by name)."""
    by_name = {ext.name: ext for ext in extensions}
    out = []
    for node in nodes:
        ext = by_name.get(node.name)
        if ext is None:
            out.append(node)
            continue
        conditions = tuple(
            NodeCondition(
                type=c.type,
                status=c.status,
                reason=c.reason,
                message=c.message,
                last_transition_time=c.last_transition_time.ToDatetime(tzinfo=UTC)
                if c.HasField("last_transition_time")
                else ZERO_TIME,
            )
            for c in ext.conditions
        )
        created = ext.creation_timestamp.ToDatetime(tzinfo=UTC) if ext.HasField("creation_timestamp") else None
        out.append(attrs.evolve(node, conditions=conditions, creation_timestamp=created))
    return tuple(out)


def _resource_collection(raw: bytes) -> ResourceCollection:
    where = "clusterpulse.resource_collection_json"
    try:
        return structure(loads(raw), ResourceCollection)
    except Exception as exc:
        raise BatchError(f"{where}: not a resource collection: {type(exc).__name__}: {exc}") from exc


def _operator(op: pb.OperatorInfo, at: datetime) -> OperatorInfo:
    return OperatorInfo(
        name=op.name,
        display_name=op.display_name,
        version=op.version,
        status=op.status,
        installed_namespace=op.installed_namespace,
        install_modes=tuple(op.install_modes),
        install_mode=op.install_mode,
        provider=op.provider,
        created_at=at,
        updated_at=at,
        is_cluster_wide=op.is_cluster_wide,
        available_in_namespaces=tuple(op.available_in_namespaces),
        available_count=op.available_count,
        subscription=dict(op.subscription),
    )


def _cluster_operator(co: pb.ClusterOperatorInfo, at: datetime) -> ClusterOperatorInfo:
    return ClusterOperatorInfo(
        name=co.name,
        version=co.version,
        available=co.available,
        progressing=co.progressing,
        degraded=co.degraded,
        upgradeable=co.upgradeable,
        message=co.message,
        reason=co.reason,
        last_transition_time=at,
        conditions=tuple(
            ClusterOperatorCondition(
                type=c.type, status=c.status, last_transition_time=ZERO_TIME, reason=c.reason, message=c.message
            )
            for c in co.conditions
        ),
        versions=tuple(ClusterOperatorVersion(v.name, v.version) for v in co.versions),
        related_objects=tuple(RelatedObject(r.group, r.resource, r.namespace, r.name) for r in co.related_objects),
    )


def _resource_values(raw: bytes, where: str) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        values = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BatchError(f"{where}.values_json: not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise BatchError(f"{where}.values_json: JSON nested too deeply to store") from exc
    if not isinstance(values, dict):
        raise BatchError(f"{where}.values_json: expected a JSON object, got {type(values).__name__}")
    return values


def _bounded(items: Sequence[T], what: str, cap: int, skipped: list[Skipped]) -> Sequence[T]:
    """The first ``cap`` of ``items``; how many were left out goes to ``skipped``."""
    if len(items) <= cap:
        return items
    skipped.append(Skipped(what, len(items) - cap, over_limit("max_batch_objects", cap), cap))
    return items[:cap]


def _bounded_nodes(batch: pb.MetricsBatch, at: datetime, cap: int, skipped: list[Skipped]) -> tuple[NodeMetrics, ...]:
    """The batch's first ``cap`` nodes with a valid name, converted; the others counted in ``skipped``.

    Only the nodes kept are converted, so a batch of 100,000 nodes costs ``cap`` node objects.
    """
    nodes: list[NodeMetrics] = []
    invalid = over = 0
    for i, sent in enumerate(batch.node_metrics):
        if not sent.name:
            raise BatchError(f"node_metrics[{i}].name: empty node name")
        if not is_dns1123_subdomain(sent.name):
            invalid += 1
        elif len(nodes) >= cap:
            over += 1
        else:
            nodes.append(_node(sent, at, i))
    if over:
        skipped.append(Skipped("nodes", over, over_limit("max_batch_nodes", cap), len(nodes)))
    if invalid:
        skipped.append(Skipped("nodes", invalid, INVALID_NAME, len(nodes)))
    return tuple(nodes)


def _counted_as_stored(
    metrics: ClusterMetrics, nodes: Sequence[NodeMetrics], max_namespaces: int, skipped: list[Skipped]
) -> ClusterMetrics:
    """The totals with the node and namespace counts of what is stored, when something was left out."""
    if any(item.what == "nodes" for item in skipped):
        ready = sum(1 for node in nodes if node.status == NodeStatus.READY.value)
        metrics = attrs.evolve(metrics, nodes=len(nodes), nodes_ready=ready, nodes_not_ready=len(nodes) - ready)
    if len(metrics.namespace_list) > max_namespaces:
        kept = _bounded(metrics.namespace_list, "namespaces", max_namespaces, skipped)
        metrics = attrs.evolve(metrics, namespace_list=tuple(kept), namespaces=len(kept))
    return metrics


def _bounded_collection(collection: ResourceCollection, cap: int, skipped: list[Skipped]) -> ResourceCollection:
    """The resource lists, each cut to ``cap`` items (``truncated`` set when one was)."""
    c = collection
    if all(len(items) <= cap for items in (c.pods, c.deployments, c.services, c.statefulsets, c.daemonsets)):
        return collection

    def cut(items: Sequence[T], what: str) -> tuple[T, ...]:
        return tuple(_bounded(items, what, cap, skipped))

    kept = attrs.evolve(
        c,
        pods=cut(c.pods, "pods"),
        deployments=cut(c.deployments, "deployments"),
        services=cut(c.services, "services"),
        statefulsets=cut(c.statefulsets, "statefulsets"),
        daemonsets=cut(c.daemonsets, "daemonsets"),
        truncated=True,
    )
    return attrs.evolve(
        kept,
        total_resources=len(kept.pods)
        + len(kept.deployments)
        + len(kept.services)
        + len(kept.statefulsets)
        + len(kept.daemonsets),
    )


#: ``aggregate(source_id, resources)``: the hub's aggregations of a source over pushed resources.
Aggregate = Callable[[str, Sequence[CollectedResource]], AggregationResults | None]


def _custom(
    cluster: str,
    entry: pb.CustomResourceBatch,
    at: datetime,
    where: str,
    aggregate: Aggregate | None = None,
    max_objects: int = BatchLimits.max_objects,
    skipped: list[Skipped] | None = None,
) -> list[Piece]:
    if "/" not in entry.source_id:
        raise BatchError(f"{where}.source_id: expected <namespace>/<name>, got {entry.source_id!r}")
    kept = _bounded(
        entry.resources, f"resources of {entry.source_id}", max_objects, skipped if skipped is not None else []
    )
    resources = tuple(
        CollectedResource(
            id=r.id,
            name=r.name,
            namespace=r.namespace,
            labels=dict(r.labels),
            values=_resource_values(r.values_json, f"{where}.resources[{j}]"),
        )
        for j, r in enumerate(kept)
    )
    pieces: list[Piece] = [
        CustomResourcesPiece(
            cluster,
            CustomResourceCollection(
                source_id=entry.source_id,
                cluster_name=cluster,
                collected_at=at,
                resource_count=entry.resource_count,
                truncated=entry.truncated or len(kept) < len(entry.resources),
                duration_ms=entry.duration_ms,
                resources=resources,
            ),
        )
    ]
    # The hub aggregates the resources itself, as a pull collection does (grouped results and
    # every type, whatever the agent computed); the agent's numbers only when it sent none.
    sent = bool(resources) or entry.resource_count == 0
    recomputed = aggregate(entry.source_id, resources) if aggregate is not None and sent else None
    if recomputed is not None:
        pieces.append(AggregationsPiece(cluster, attrs.evolve(recomputed, computed_at=at)))
    elif entry.aggregation_values:
        pieces.append(
            AggregationsPiece(
                cluster,
                AggregationResults(
                    source_id=entry.source_id,
                    computed_at=at,
                    duration_ms=entry.duration_ms,
                    values={k: float(v) for k, v in entry.aggregation_values.items()},
                ),
            )
        )
    return pieces


def pieces_from_batch(
    batch: pb.MetricsBatch,
    cluster: str,
    received: datetime,
    agent: AgentStatus | None = None,
    endpoint: str = "",
    display_name: str = "",
    health: Callable[[ClusterMetrics], HealthVerdict] = cluster_health,
    aggregate: Aggregate | None = None,
    limits: BatchLimits | None = None,
    skipped: list[Skipped] | None = None,
) -> list[Piece]:
    """Every piece a batch stores, in the pull write order, then status and event
    (docs/compatibility.md#collector-protocol).

    ``limits`` bound the items stored per list; what they (or a node name that is not a DNS-1123
    subdomain) left out is added to ``skipped`` and said in the stored status's message, and the
    counts stored are of what was stored.

    ``agent`` is the status's ``agent`` field (see :mod:`clusterpulse_ingester.agents`);
    ``endpoint`` and ``display_name`` the ClusterConnection's (the endpoint is the ``api_url``
    when the batch has none). The status and event carry ``health(totals)``, the verdict a pull
    reconcile gives the same totals (docs/readers.md#r7-health). ``aggregate`` recomputes each
    MetricSource's aggregations from the batch's resources (see :data:`Aggregate`).

    Raises :class:`BatchError` (naming the field) for content that cannot be stored; nothing of
    such a batch is stored.
    """
    at = batch_time(batch, received)
    limits = limits or BatchLimits()
    left_out: list[Skipped] = []
    pieces: list[Piece] = []
    nodes = _bounded_nodes(batch, at, limits.max_nodes, left_out)
    if nodes:
        pieces.append(NodesPiece(cluster, nodes))
    extension = batch.clusterpulse if batch.HasField("clusterpulse") else None
    if extension is not None and extension.nodes:
        nodes = _with_node_extension(nodes, extension.nodes)
        pieces[:] = [NodesPiece(cluster, nodes)] if nodes else []
    metrics: ClusterMetrics | None = None
    if batch.HasField("cluster_metrics"):
        metrics = cluster_metrics_of(batch.cluster_metrics, nodes, at)
        if extension is not None and extension.HasField("counts"):
            c = extension.counts
            metrics = attrs.evolve(
                metrics, services=c.services, statefulsets=c.statefulsets, daemonsets=c.daemonsets, pvcs=c.pvcs
            )
        metrics = _counted_as_stored(metrics, nodes, limits.max_objects, left_out)
        pieces.append(ClusterMetricsPiece(cluster, metrics))
        if metrics.namespace_list:
            pieces.append(NamespacesPiece(cluster, metrics.namespace_list, timestamp=at))
    if batch.HasField("cluster_info"):
        pieces.append(ClusterInfoPiece(cluster, cluster_info_map(batch.cluster_info, endpoint)))
    if extension is not None and extension.resource_collection_json:
        collection = _bounded_collection(
            _resource_collection(extension.resource_collection_json), limits.max_objects, left_out
        )
        pieces.append(ResourceCollectionPiece(cluster, collection))
    if batch.operators:
        kept_operators = _bounded(batch.operators, "operators", limits.max_objects, left_out)
        pieces.append(OperatorsPiece(cluster, tuple(_operator(op, at) for op in kept_operators)))
    if batch.cluster_operators:
        kept_cos = _bounded(batch.cluster_operators, "cluster operators", limits.max_objects, left_out)
        pieces.append(ClusterOperatorsPiece(cluster, tuple(_cluster_operator(co, at) for co in kept_cos)))
    for i, entry in enumerate(batch.custom_resources):
        pieces.extend(_custom(cluster, entry, at, f"custom_resources[{i}]", aggregate, limits.max_objects, left_out))
    verdict = health(metrics) if metrics is not None else HealthVerdict(Health.HEALTHY.value, HEALTHY_MESSAGE)
    left_out[:] = merged(left_out)
    if skipped is not None:
        skipped.extend(left_out)
    truncation = describe(left_out)
    message = f"{verdict.message}; {truncation}" if truncation else verdict.message
    pieces.append(ClusterStatusPiece(cluster, ClusterStatusRecord(verdict.health, message, received, agent)))
    event: dict[str, Any] = {"health": verdict.health, "source": "collector-push"}
    if metrics is not None:
        event.update(nodes=metrics.nodes, nodes_ready=metrics.nodes_ready, namespaces=metrics.namespaces)
    if display_name:
        event["display_name"] = display_name
    # The event carries the collection time: a batch replayed after an outage is history of then.
    pieces.append(EventPiece("cluster.reconciled", cluster, event, timestamp=at))
    return pieces
