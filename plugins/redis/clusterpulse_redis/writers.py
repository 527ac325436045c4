"""One writer per piece type: the commands that store it, queued on a pipeline (redis.md §2 to §10).

Writers only queue commands; :class:`clusterpulse_redis.store.RedisStore` sends them. Every
value is encoded by the core converter, from a domain object or a stored shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import attrs
from redis.client import Pipeline
from redis.typing import EncodableT

from clusterpulse_core.pieces import (
    AggregationsPiece,
    ClusterInfoPiece,
    ClusterLabelsPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    ClusterSpecPiece,
    ClusterStatusPiece,
    CustomResourcesPiece,
    EventPiece,
    MetricSourcePiece,
    NamespacesPiece,
    NodesPiece,
    OperatorsPiece,
    Piece,
    RegistryMetricsPiece,
    RegistrySpecPiece,
    RegistryStatusPiece,
    ResourceCollectionPiece,
)
from clusterpulse_core.serde import dumps, unstructure
from clusterpulse_redis import derive, keys
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

    @property
    def now_unix(self) -> int:
        """The store time in whole unix seconds (time-series scores)."""
        return int(self.now.timestamp())


Writer = Callable[[Pipeline, Any, WriteContext], None]


HashMapping = Mapping[EncodableT, EncodableT]


def _hash(obj: Any) -> HashMapping:
    """A stored-shape object as an ``HSET`` mapping (field -> string)."""
    fields: HashMapping = unstructure(obj)
    return fields


# ---------------------------------------------------------------------------- cluster (§2)


def write_cluster_spec(pipe: Pipeline, piece: ClusterSpecPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:spec``, no expiry."""
    pipe.set(keys.cluster(piece.cluster, "spec"), dumps(piece.spec))


def write_cluster_labels(pipe: Pipeline, piece: ClusterLabelsPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:labels``, no expiry; only when there is at least one label."""
    if piece.labels:
        pipe.set(keys.cluster(piece.cluster, "labels"), dumps(piece.labels))


def write_cluster_status(pipe: Pipeline, piece: ClusterStatusPiece, ctx: WriteContext) -> None:
    """Status batch (§2.4): status, meta ``last_update`` and membership of ``clusters:all``."""
    pipe.set(keys.cluster(piece.cluster, "status"), dumps(piece.status))
    pipe.hset(keys.cluster(piece.cluster, "meta"), mapping=_hash(ClusterMetaFields(last_update=ctx.now)))
    pipe.sadd(keys.CLUSTERS_ALL, piece.cluster)


def write_cluster_info(pipe: Pipeline, piece: ClusterInfoPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:info`` with its fixed one-hour TTL."""
    pipe.set(keys.cluster(piece.cluster, "info"), dumps(piece.info), ex=keys.CLUSTER_INFO_TTL)


def _write_namespaces(pipe: Pipeline, cluster: str, names: tuple[str, ...], timestamp: datetime,
                      ctx: WriteContext) -> None:
    """§2.8: the JSON list, then the set rebuilt (absent when there are no namespaces)."""
    value = StoredNamespaces(namespaces=names, count=len(names), timestamp=timestamp)
    pipe.set(keys.cluster(cluster, "namespaces"), dumps(value), ex=ctx.cache_ttl)
    set_key = keys.cluster(cluster, "namespaces:set")
    pipe.delete(set_key)
    if names:
        pipe.sadd(set_key, *names)
        pipe.expire(set_key, ctx.cache_ttl)


def write_cluster_metrics(pipe: Pipeline, piece: ClusterMetricsPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:metrics`` (fixed 300 s) and the namespaces from its list (§2.7, §13.1)."""
    stored = derive.cluster_metrics(piece.metrics)
    pipe.set(keys.cluster(piece.cluster, "metrics"), dumps(stored), ex=keys.CLUSTER_METRICS_TTL)
    _write_namespaces(pipe, piece.cluster, piece.metrics.namespace_list, ctx.now, ctx)


def write_namespaces(pipe: Pipeline, piece: NamespacesPiece, ctx: WriteContext) -> None:
    """``cluster:<c>:namespaces`` and ``:namespaces:set`` on their own (§2.8)."""
    _write_namespaces(pipe, piece.cluster, piece.namespaces, piece.timestamp, ctx)


def write_event(pipe: Pipeline, piece: EventPiece, ctx: WriteContext) -> None:
    """Publish an event; cluster/registry events also go to ``events:<name>`` (§2.9, §10.7)."""
    if piece.channel == keys.METRICSOURCE_EVENTS_CHANNEL:
        event = MetricSourceEvent(type=piece.type, source_id=piece.target, timestamp=piece.timestamp,
                                  data=piece.data)
        pipe.publish(piece.channel, dumps(event))
        return
    message = dumps(ClusterEvent(type=piece.type, cluster=piece.target, timestamp=piece.timestamp,
                                 data=piece.data))
    events_key = keys.events(piece.target)
    pipe.publish(piece.channel, message)
    pipe.lpush(events_key, message)
    pipe.ltrim(events_key, 0, keys.EVENTS_KEPT - 1)
    pipe.expire(events_key, keys.EVENTS_TTL)


# ---------------------------------------------------------------------------- nodes (§3)


def write_nodes(pipe: Pipeline, piece: NodesPiece, ctx: WriteContext) -> None:
    """Node hashes and time series, then the node set, then the summary (one batch, §3)."""
    cutoff = ctx.now_unix - ctx.metrics_retention
    current_nodes = [derive.node_current(node) for node in piece.nodes]
    for node in current_nodes:
        node_key = keys.node(piece.cluster, node.name)
        series_key = keys.node_metrics(piece.cluster, node.name)
        current = dumps(node).decode()
        pipe.hset(node_key, mapping=_hash(derive.node_hash_fields(node, current, ctx.now)))
        pipe.expire(node_key, ctx.cache_ttl)
        pipe.zadd(series_key, {dumps(derive.node_sample(node)): ctx.now_unix})
        pipe.zremrangebyscore(series_key, "-inf", cutoff)
        pipe.expire(series_key, ctx.metrics_retention)
    if current_nodes:
        pipe.sadd(keys.cluster(piece.cluster, "nodes"), *(node.name for node in current_nodes))
    summary_key = keys.cluster(piece.cluster, "nodes:summary")
    pipe.hset(summary_key, "data", dumps(derive.nodes_summary(current_nodes, ctx.now)))
    pipe.expire(summary_key, ctx.cache_ttl)


# ---------------------------------------------------------------------------- operators (§4, §5)


def write_operators(pipe: Pipeline, piece: OperatorsPiece, ctx: WriteContext) -> None:
    """OLM operators and their summary (§4); nothing when the scan found none."""
    if not piece.operators:
        return
    stored = [derive.stored_operator(op) for op in piece.operators]
    pipe.set(keys.cluster(piece.cluster, "operators"), dumps(stored), ex=ctx.cache_ttl)
    pipe.set(keys.cluster(piece.cluster, "operators_summary"),
             dumps(derive.operators_summary(piece.operators)), ex=ctx.cache_ttl)


def write_cluster_operators(pipe: Pipeline, piece: ClusterOperatorsPiece, ctx: WriteContext) -> None:
    """ClusterOperators list, summary and per-operator keys (§5); nothing when there are none."""
    operators = piece.cluster_operators
    if not operators:
        return
    pipe.set(keys.cluster(piece.cluster, "cluster_operators"), dumps(operators), ex=ctx.cache_ttl)
    pipe.set(keys.cluster(piece.cluster, "cluster_operators_summary"),
             dumps(derive.cluster_operators_summary(operators, ctx.now)), ex=ctx.cache_ttl)
    for op in operators:
        pipe.set(keys.cluster_operator(piece.cluster, op.name),
                 dumps(derive.cluster_operator_state(op, ctx.now)), ex=ctx.cache_ttl)


# ---------------------------------------------------------------------------- resources (§6)


def write_resource_collection(pipe: Pipeline, piece: ResourceCollectionPiece, ctx: WriteContext) -> None:
    """Each non-empty workload list and the collection metadata (§6)."""
    collection = piece.collection
    lists = {
        "pods": collection.pods,
        "deployments": collection.deployments,
        "services": collection.services,
        "statefulsets": collection.statefulsets,
        "daemonsets": collection.daemonsets,
    }
    for suffix, items in lists.items():
        if items:
            pipe.set(keys.cluster(piece.cluster, suffix), dumps(items), ex=ctx.cache_ttl)
    pipe.set(keys.cluster(piece.cluster, "resource_metadata"),
             dumps(derive.resource_metadata(collection)), ex=ctx.cache_ttl)


# ---------------------------------------------------------------------------- registries (§7)


def write_registry_spec(pipe: Pipeline, piece: RegistrySpecPiece, ctx: WriteContext) -> None:
    """``registry:<r>:spec``, no expiry."""
    pipe.set(keys.registry(piece.registry, "spec"), dumps(piece.spec))


def write_registry_status(pipe: Pipeline, piece: RegistryStatusPiece, ctx: WriteContext) -> None:
    """Status batch (§7.1, §7.3, §7.4)."""
    status = piece.status
    pipe.set(keys.registry(piece.registry, "status"), dumps(status), ex=ctx.cache_ttl)
    meta = RegistryMetaFields(last_update=ctx.now, available="true" if status.available else "false")
    pipe.hset(keys.registry(piece.registry, "meta"), mapping=_hash(meta))
    pipe.sadd(keys.REGISTRIES_ALL, piece.registry)


def write_registry_metrics(pipe: Pipeline, piece: RegistryMetricsPiece, ctx: WriteContext) -> None:
    """One sample in the trimmed time series plus ``:metrics:latest`` (§7.5).

    The score is the sample's ``timestamp``, or the store time when the sample has none.
    """
    series_key = keys.registry(piece.registry, "metrics")
    sample = dumps(piece.metrics)
    pipe.zadd(series_key, {sample: piece.metrics.timestamp or ctx.now_unix})
    pipe.zremrangebyscore(series_key, "-inf", ctx.now_unix - ctx.metrics_retention)
    pipe.expire(series_key, ctx.metrics_retention)
    pipe.set(keys.registry(piece.registry, "metrics:latest"), sample, ex=ctx.cache_ttl)


# ---------------------------------------------------------------------------- MetricSource (§10)


def write_metricsource(pipe: Pipeline, piece: MetricSourcePiece, ctx: WriteContext) -> None:
    """Definition, index sets and meta hash (§10.1 to §10.3), no expiry."""
    source_id = piece.source_id
    pipe.set(keys.metricsource(piece.namespace, piece.name), dumps(piece.compiled))
    pipe.sadd(keys.METRICSOURCES_ALL, source_id)
    pipe.sadd(keys.METRICSOURCES_ENABLED, source_id)
    if piece.resource_type_name:
        pipe.sadd(keys.metricsources_by_type(piece.resource_type_name), source_id)
    meta = MetricSourceMetaFields(compiled_at=piece.compiled_at, hash=piece.hash, kind=piece.kind,
                                  api_version=piece.api_version,
                                  resource_type_name=piece.resource_type_name)
    pipe.hset(keys.metricsource_meta(piece.namespace, piece.name), mapping=_hash(meta))


def write_custom_resources(pipe: Pipeline, piece: CustomResourcesPiece, ctx: WriteContext) -> None:
    """One cluster's collection of one MetricSource and its meta (§10.4, §10.5)."""
    collection = piece.collection
    pipe.set(keys.custom(piece.cluster, collection.source_id, "resources"), dumps(collection),
             ex=ctx.cache_ttl)
    pipe.set(keys.custom(piece.cluster, collection.source_id, "meta"),
             dumps(derive.custom_resource_meta(collection)), ex=ctx.cache_ttl)


def write_aggregations(pipe: Pipeline, piece: AggregationsPiece, ctx: WriteContext) -> None:
    """One cluster's aggregation results of one MetricSource (§10.6)."""
    pipe.set(keys.custom(piece.cluster, piece.results.source_id, "aggregations"), dumps(piece.results),
             ex=ctx.cache_ttl)


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
}
