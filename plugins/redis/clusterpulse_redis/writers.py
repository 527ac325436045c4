"""One writer per piece type: the commands that store it, queued on a batch (docs/compatibility.md#redis-keys).

Writers only queue commands on a :class:`CommandBatch`, which sends them as they pile up;
:class:`clusterpulse_redis.store.RedisStore` reads the replies. Every value is encoded by the
core converter, from a domain object or a stored shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import attrs
from clusterpulse_model.pieces import (
    AggregationsPiece,
    AlertPiece,
    AlertResolution,
    ClusterInfoPiece,
    ClusterLabelsPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    ClusterSpecPiece,
    ClusterStatusPiece,
    CustomResourcesPiece,
    DaemonSetSummary,
    DeploymentSummary,
    EventPiece,
    MetricSourcePiece,
    NamespacesPiece,
    NodesPiece,
    OperatorsPiece,
    PodSummary,
    PolicyErrorPiece,
    PolicyEventPiece,
    RegistryMetricsPiece,
    RegistrySpecPiece,
    RegistryStatusPiece,
    ResourceCollectionPiece,
    ServiceSummary,
    StatefulSetSummary,
)

from clusterpulse_core.names import NameGuard, is_dns1123_subdomain
from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import dumps, unstructure
from clusterpulse_redis import derive, keys
from clusterpulse_redis.policies import write_policy_error, write_policy_event
from clusterpulse_redis.resp import Arg, CommandBatch
from clusterpulse_redis.stored import (
    ClusterEvent,
    ClusterMetaFields,
    MetricSourceEvent,
    MetricSourceMetaFields,
    RegistryMetaFields,
    StoredNamespaces,
)


@attrs.frozen
class WriteContext:
    """What every writer of one store call shares: the store time and the configured TTLs."""

    now: datetime
    cache_ttl: int
    metrics_retention: int
    #: Skips (and counts) names that are not valid Kubernetes names before they go into keys.
    names: NameGuard = attrs.field(factory=NameGuard)
    #: Per cluster, the members of ``cluster:<c>:nodes`` before this store (read by the store).
    previous_nodes: Mapping[str, frozenset[str]] = attrs.field(factory=dict)

    @property
    def now_unix(self) -> int:
        """The store time in whole unix seconds (time-series scores)."""
        return int(self.now.timestamp())


Writer = Callable[[CommandBatch, Any, WriteContext], None]


def sample_score(collected: datetime, store_unix: int) -> int:
    """The time-series score of a sample: when it was collected (a pushed batch replayed after an
    outage keeps its own time), the store time when the sample has no plausible time of its own."""
    if collected.year < 2000:
        return store_unix
    return int(collected.timestamp())


def _hash(obj: Any) -> Mapping[str, Arg]:
    """A stored-shape object as an ``HSET`` mapping (field -> text or encoded JSON)."""
    fields: Mapping[str, Arg] = unstructure(obj)
    return fields


# ---------------------------------------------------------------------------- cluster


def write_cluster_spec(batch: CommandBatch, piece: ClusterSpecPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:spec``, no expiry."""
    batch.set(keys.cluster(piece.cluster, "spec"), dumps(piece.spec))


def write_cluster_labels(batch: CommandBatch, piece: ClusterLabelsPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:labels``, no expiry; only when there is at least one label."""
    if piece.labels:
        batch.set(keys.cluster(piece.cluster, "labels"), dumps(piece.labels))


def write_cluster_status(batch: CommandBatch, piece: ClusterStatusPiece, ctx: WriteContext) -> None:
    """Status batch: status, meta ``last_update`` and membership of ``clusters:all``."""
    batch.set(keys.cluster(piece.cluster, "status"), dumps(piece.status))
    batch.hset(keys.cluster(piece.cluster, "meta"), _hash(ClusterMetaFields(last_update=ctx.now)))
    batch.sadd(keys.CLUSTERS_ALL, piece.cluster)


def write_cluster_info(batch: CommandBatch, piece: ClusterInfoPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:info`` with its fixed one-hour TTL."""
    batch.set(keys.cluster(piece.cluster, "info"), dumps(piece.info), ex=keys.CLUSTER_INFO_TTL)


def _write_namespaces(
    batch: CommandBatch, cluster: str, names: tuple[str, ...], timestamp: datetime, ctx: WriteContext
) -> None:
    """docs/compatibility.md#redis-keys: the JSON list, then the set rebuilt (absent when there are no namespaces)."""
    value = StoredNamespaces(namespaces=names, count=len(names), timestamp=timestamp)
    batch.set(keys.cluster(cluster, "namespaces"), dumps(value), ex=ctx.cache_ttl)
    set_key = keys.cluster(cluster, "namespaces:set")
    batch.delete(set_key)
    if names:
        batch.sadd(set_key, *names)
        batch.expire(set_key, ctx.cache_ttl)


def write_cluster_metrics(batch: CommandBatch, piece: ClusterMetricsPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:metrics`` (fixed 300 s) and the namespaces from its list (docs/compatibility.md#redis-keys,
    #redis-conventions)."""
    stored = derive.cluster_metrics(piece.metrics)
    batch.set(keys.cluster(piece.cluster, "metrics"), dumps(stored), ex=keys.CLUSTER_METRICS_TTL)
    _write_namespaces(batch, piece.cluster, piece.metrics.namespace_list, ctx.now, ctx)


def write_namespaces(batch: CommandBatch, piece: NamespacesPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:namespaces`` and ``:namespaces:set`` on their own."""
    _write_namespaces(batch, piece.cluster, piece.namespaces, piece.timestamp, ctx)


def write_event(batch: CommandBatch, piece: EventPiece, ctx: WriteContext) -> None:
    """Publish an event; cluster/registry events also go to ``events:<name>``."""
    if piece.channel == keys.METRICSOURCE_EVENTS_CHANNEL:
        event = MetricSourceEvent(type=piece.type, source_id=piece.target, timestamp=piece.timestamp, data=piece.data)
        batch.publish(piece.channel, dumps(event))
        return
    message = dumps(ClusterEvent(type=piece.type, cluster=piece.target, timestamp=piece.timestamp, data=piece.data))
    events_key = keys.events(piece.target)
    batch.publish(piece.channel, message)
    batch.lpush(events_key, message)
    batch.ltrim(events_key, 0, keys.EVENTS_KEPT - 1)
    batch.expire(events_key, keys.EVENTS_TTL)


# ---------------------------------------------------------------------------- nodes


def write_nodes(batch: CommandBatch, piece: NodesPiece, ctx: WriteContext) -> None:
    """Node hashes, conditions and time series, then the node set, then the summary (one batch,
    docs/compatibility.md#redis-keys).

    The conditions hash (docs/compatibility.md#r2) is rewritten whole with its node: deleted, then
    filled when the node has conditions, with the node hash's TTL. Nodes whose name is not a
    DNS-1123 subdomain are skipped (counted, never written). The node set is rewritten to the
    current nodes, and the keys of nodes no longer there are deleted.
    """
    now, now_unix, cache_ttl, retention = ctx.now, ctx.now_unix, ctx.cache_ttl, ctx.metrics_retention
    cutoff = now_unix - retention
    current_nodes = [
        derive.node_current(node) for node in piece.nodes if ctx.names.subdomain("node", piece.cluster, node.name)
    ]
    for node in current_nodes:
        node_key = keys.node(piece.cluster, node.name)
        series_key = keys.node_metrics(piece.cluster, node.name)
        batch.hset(node_key, _hash(derive.node_hash_fields(node, dumps(node), now)))
        batch.expire(node_key, cache_ttl)
        conditions_key = keys.node_conditions(piece.cluster, node.name)
        batch.delete(conditions_key)
        conditions = derive.node_conditions(node)
        if conditions:
            batch.hset(conditions_key, conditions)
            batch.expire(conditions_key, cache_ttl)
        batch.zadd(series_key, sample_score(node.timestamp, now_unix), dumps(derive.node_sample(node)))
        batch.zremrangebyscore(series_key, "-inf", cutoff)
        batch.expire(series_key, retention)
    set_key = keys.cluster(piece.cluster, "nodes")
    if current_nodes:
        batch.sadd(set_key, *(node.name for node in current_nodes))
    # Members go before their keys, so a reader never finds a member whose hash was deleted.
    gone = sorted(ctx.previous_nodes.get(piece.cluster, frozenset()) - {node.name for node in current_nodes})
    if gone:
        batch.srem(set_key, *gone)
    for name in gone:
        if not is_dns1123_subdomain(name):
            continue  # an invalid member left by an older version: its "keys" may be another node's
        batch.delete(keys.node(piece.cluster, name))
        batch.delete(keys.node_metrics(piece.cluster, name))
        batch.delete(keys.node_conditions(piece.cluster, name))
    summary_key = keys.cluster(piece.cluster, "nodes:summary")
    batch.hset(summary_key, {"data": dumps(derive.nodes_summary(current_nodes, now))})
    batch.expire(summary_key, cache_ttl)


# ---------------------------------------------------------------------------- operators


def write_operators(batch: CommandBatch, piece: OperatorsPiece, ctx: WriteContext) -> None:
    """OLM operators and their summary; nothing when the scan found none."""
    if not piece.operators:
        return
    stored = [derive.stored_operator(op) for op in piece.operators]
    batch.set(keys.cluster(piece.cluster, "operators"), dumps(stored), ex=ctx.cache_ttl)
    batch.set(
        keys.cluster(piece.cluster, "operators_summary"),
        dumps(derive.operators_summary(piece.operators)),
        ex=ctx.cache_ttl,
    )


def write_cluster_operators(batch: CommandBatch, piece: ClusterOperatorsPiece, ctx: WriteContext) -> None:
    """ClusterOperators list, summary and per-operator keys; nothing when there are none."""
    operators = piece.cluster_operators
    if not operators:
        return
    batch.set(keys.cluster(piece.cluster, "cluster_operators"), dumps(operators), ex=ctx.cache_ttl)
    batch.set(
        keys.cluster(piece.cluster, "cluster_operators_summary"),
        dumps(derive.cluster_operators_summary(operators, ctx.now)),
        ex=ctx.cache_ttl,
    )
    for op in operators:
        if not ctx.names.subdomain("cluster_operator", piece.cluster, op.name):
            continue
        batch.set(
            keys.cluster_operator(piece.cluster, op.name),
            dumps(derive.cluster_operator_state(op, ctx.now)),
            ex=ctx.cache_ttl,
        )


# ---------------------------------------------------------------------------- resources (docs/compatibility.md#r3)


def write_resource_collection(batch: CommandBatch, piece: ResourceCollectionPiece, ctx: WriteContext) -> None:
    """Each non-empty workload list and the collection metadata (docs/compatibility.md#r3).

    An empty list's key is deleted, so a list that emptied does not linger until it expires.
    """
    collection = piece.collection
    lists: tuple[tuple[str, tuple[Any, ...], Any], ...] = (
        ("pods", collection.pods, tuple[PodSummary, ...]),
        ("deployments", collection.deployments, tuple[DeploymentSummary, ...]),
        ("services", collection.services, tuple[ServiceSummary, ...]),
        ("statefulsets", collection.statefulsets, tuple[StatefulSetSummary, ...]),
        ("daemonsets", collection.daemonsets, tuple[DaemonSetSummary, ...]),
    )
    for suffix, items, as_type in lists:
        if items:
            batch.set(keys.cluster(piece.cluster, suffix), dumps(items, as_type), ex=ctx.cache_ttl)
        else:
            batch.delete(keys.cluster(piece.cluster, suffix))
    batch.set(
        keys.cluster(piece.cluster, "resource_metadata"), dumps(derive.resource_metadata(collection)), ex=ctx.cache_ttl
    )


# ---------------------------------------------------------------------------- registries


def write_registry_spec(batch: CommandBatch, piece: RegistrySpecPiece, ctx: WriteContext) -> None:
    """``registry:<r>:spec``, no expiry."""
    batch.set(keys.registry(piece.registry, "spec"), dumps(piece.spec))


def write_registry_status(batch: CommandBatch, piece: RegistryStatusPiece, ctx: WriteContext) -> None:
    """Status batch."""
    status = piece.status
    batch.set(keys.registry(piece.registry, "status"), dumps(status), ex=ctx.cache_ttl)
    meta = RegistryMetaFields(last_update=ctx.now, available="true" if status.available else "false")
    batch.hset(keys.registry(piece.registry, "meta"), _hash(meta))
    batch.sadd(keys.REGISTRIES_ALL, piece.registry)


def write_registry_metrics(batch: CommandBatch, piece: RegistryMetricsPiece, ctx: WriteContext) -> None:
    """One sample in the trimmed time series plus ``:metrics:latest``.

    The score is the sample's ``timestamp``, or the store time when the sample has none.
    """
    series_key = keys.registry(piece.registry, "metrics")
    sample = dumps(piece.metrics)
    batch.zadd(series_key, piece.metrics.timestamp or ctx.now_unix, sample)
    batch.zremrangebyscore(series_key, "-inf", ctx.now_unix - ctx.metrics_retention)
    batch.expire(series_key, ctx.metrics_retention)
    batch.set(keys.registry(piece.registry, "metrics:latest"), sample, ex=ctx.cache_ttl)


# ---------------------------------------------------------------------------- MetricSource


def write_metricsource(batch: CommandBatch, piece: MetricSourcePiece, ctx: WriteContext) -> None:
    """Definition, index sets and meta hash, no expiry."""
    source_id = piece.source_id
    batch.set(keys.metricsource(piece.namespace, piece.name), dumps(piece.compiled))
    batch.sadd(keys.METRICSOURCES_ALL, source_id)
    batch.sadd(keys.METRICSOURCES_ENABLED, source_id)
    if piece.resource_type_name:
        batch.sadd(keys.metricsources_by_type(piece.resource_type_name), source_id)
    meta = MetricSourceMetaFields(
        compiled_at=piece.compiled_at,
        hash=piece.hash,
        kind=piece.kind,
        api_version=piece.api_version,
        resource_type_name=piece.resource_type_name,
    )
    batch.hset(keys.metricsource_meta(piece.namespace, piece.name), _hash(meta))


def write_custom_resources(batch: CommandBatch, piece: CustomResourcesPiece, ctx: WriteContext) -> None:
    """One cluster's collection of one MetricSource and its meta."""
    collection = piece.collection
    batch.set(keys.custom(piece.cluster, collection.source_id, "resources"), dumps(collection), ex=ctx.cache_ttl)
    batch.set(
        keys.custom(piece.cluster, collection.source_id, "meta"),
        dumps(derive.custom_resource_meta(collection)),
        ex=ctx.cache_ttl,
    )


def write_aggregations(batch: CommandBatch, piece: AggregationsPiece, ctx: WriteContext) -> None:
    """One cluster's aggregation results of one MetricSource."""
    batch.set(
        keys.custom(piece.cluster, piece.results.source_id, "aggregations"), dumps(piece.results), ex=ctx.cache_ttl
    )


# ---------------------------------------------------------------------------- alerts (R4)


def write_alert(batch: CommandBatch, piece: AlertPiece, ctx: WriteContext) -> None:
    """Hash ``alerts:<c>:<id>`` (every field a string), expiring after ``CACHE_TTL``."""
    key = keys.alert(piece.cluster, piece.alert.id)
    batch.hset(key, _hash(piece.alert))
    batch.expire(key, ctx.cache_ttl)


def write_alert_resolution(batch: CommandBatch, piece: AlertResolution, ctx: WriteContext) -> None:
    """A resolved alert's hash is deleted."""
    batch.delete(keys.alert(piece.cluster, piece.alert.id))


#: Piece type -> writer. Pieces of other types are not Redis's business and are ignored.
WRITERS: Mapping[type[Piece], Writer] = {
    ClusterSpecPiece: write_cluster_spec,
    ClusterLabelsPiece: write_cluster_labels,
    ClusterStatusPiece: write_cluster_status,
    ClusterInfoPiece: write_cluster_info,
    ClusterMetricsPiece: write_cluster_metrics,
    NamespacesPiece: write_namespaces,
    EventPiece: write_event,
    NodesPiece: write_nodes,
    OperatorsPiece: write_operators,
    ClusterOperatorsPiece: write_cluster_operators,
    ResourceCollectionPiece: write_resource_collection,
    RegistrySpecPiece: write_registry_spec,
    RegistryStatusPiece: write_registry_status,
    RegistryMetricsPiece: write_registry_metrics,
    MetricSourcePiece: write_metricsource,
    CustomResourcesPiece: write_custom_resources,
    AggregationsPiece: write_aggregations,
    AlertPiece: write_alert,
    AlertResolution: write_alert_resolution,
    PolicyErrorPiece: write_policy_error,
    PolicyEventPiece: write_policy_event,
}
