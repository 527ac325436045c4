"""Removing the state of a deleted cluster, registry or MetricSource (docs/compatibility.md#deletion).

Deletions read before they write (``SCAN``, the stored definition), so unlike the writers
they talk to Redis themselves. ``SCAN MATCH`` is acceptable here: deletion is not a hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import redis
from clusterpulse_model.pieces import (
    ClusterDeletion,
    MetricSourceClusterDeletion,
    MetricSourceDeletion,
    PolicyDeletion,
    PolicyEvalCacheReset,
    PolicyPiece,
    PolicyValidation,
    RegistryDeletion,
)

from clusterpulse_core.pieces import Piece, RecordDeletion, RecordPiece
from clusterpulse_core.serde import loads
from clusterpulse_redis import keys
from clusterpulse_redis.policies import delete_policy, reset_eval_cache, store_policy, validate_policies
from clusterpulse_redis.records import delete_record, write_record

#: Keys deleted per pipeline (docs/compatibility.md#deletion: 1000 for clusters, 100 for registries).
CLUSTER_DELETE_BATCH = 1000
REGISTRY_DELETE_BATCH = 100
SCAN_COUNT = 100

Deleter = Callable[[Any, Any], None]


def _matching(client: redis.Redis, pattern: str) -> Iterator[bytes]:
    """Every key matching ``pattern`` (a full ``SCAN`` of the keyspace)."""
    yield from client.scan_iter(match=pattern, count=SCAN_COUNT)


def _batches(items: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _delete_all(client: redis.Redis, pattern: str, batch_size: int) -> None:
    """``DEL`` every key matching ``pattern``, ``batch_size`` keys per pipeline."""
    found = list(_matching(client, pattern))
    for batch in _batches(found, batch_size):
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.delete(key)
        pipe.execute()


def delete_cluster(client: redis.Redis, piece: ClusterDeletion) -> None:
    """Every ``cluster:<c>:*`` and ``alerts:<c>:*`` key, then the namespaces and ``clusters:all`` membership.

    ``events:<c>`` stays (the ``cluster.deleted`` event re-creates it anyway), as do
    MetricSource definitions.
    """
    name = piece.cluster
    _delete_all(client, keys.cluster(keys.glob_literal(name), "*"), CLUSTER_DELETE_BATCH)
    _delete_all(client, keys.alerts_of(name), CLUSTER_DELETE_BATCH)
    pipe = client.pipeline(transaction=False)
    pipe.delete(keys.cluster(name, "namespaces"))
    pipe.delete(keys.cluster(name, "namespaces:set"))
    pipe.srem(keys.CLUSTERS_ALL, name)
    pipe.execute()


def delete_registry(client: redis.Redis, piece: RegistryDeletion) -> None:
    """Every ``registry:<r>:*`` and ``alerts:<r>:*`` key, then ``registries:all`` membership (``events:<r>`` stays)."""
    name = piece.registry
    _delete_all(client, keys.registry(keys.glob_literal(name), "*"), REGISTRY_DELETE_BATCH)
    _delete_all(client, keys.alerts_of(name), REGISTRY_DELETE_BATCH)
    client.srem(keys.REGISTRIES_ALL, name)


def _resource_type_name(stored: bytes | None) -> str | None:
    """``rbac.resourceTypeName`` of a stored definition; ``None`` when it cannot be read."""
    if stored is None:
        return None
    try:
        definition = loads(stored)
    except ValueError:
        return None
    rbac = definition.get("rbac") if isinstance(definition, dict) else None
    name = rbac.get("resourceTypeName") if isinstance(rbac, dict) else None
    return name if isinstance(name, str) else None


def delete_metricsource(client: redis.Redis, piece: MetricSourceDeletion) -> None:
    """Definition, meta, index memberships and every cluster's data of the source, in one batch."""
    definition_key = keys.metricsource(piece.namespace, piece.name)
    stored: bytes | None = client.get(definition_key)  # type: ignore[assignment]
    type_name = _resource_type_name(stored)
    per_cluster = list(_matching(client, keys.custom("*", keys.glob_literal(piece.source_id), "*")))
    pipe = client.pipeline(transaction=False)
    pipe.delete(definition_key)
    pipe.srem(keys.METRICSOURCES_ALL, piece.source_id)
    pipe.srem(keys.METRICSOURCES_ENABLED, piece.source_id)
    if type_name:
        pipe.srem(keys.metricsources_by_type(type_name), piece.source_id)
    pipe.delete(keys.metricsource_meta(piece.namespace, piece.name))
    for key in per_cluster:
        pipe.delete(key)
    pipe.execute()


def delete_metricsource_cluster_data(client: redis.Redis, piece: MetricSourceClusterDeletion) -> None:
    """One cluster's collection, meta and aggregations of one source."""
    client.delete(
        *(keys.custom(piece.cluster, piece.source_id, suffix) for suffix in ("resources", "meta", "aggregations"))
    )


#: Piece type -> deletion (or a write that reads first). Each runs after the commands queued before it
#: were sent.
DELETERS: Mapping[type[Piece], Deleter] = {
    ClusterDeletion: delete_cluster,
    RegistryDeletion: delete_registry,
    MetricSourceDeletion: delete_metricsource,
    MetricSourceClusterDeletion: delete_metricsource_cluster_data,
    RecordPiece: write_record,
    RecordDeletion: delete_record,
    PolicyPiece: store_policy,
    PolicyDeletion: delete_policy,
    PolicyValidation: validate_policies,
    PolicyEvalCacheReset: reset_eval_cache,
}
