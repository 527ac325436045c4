"""Generic records (:class:`~clusterpulse_core.pieces.RecordPiece`): any plugin's kind, no Redis code.

Layout (``docs/storage.md``)::

    <kind>:<namespace>/<name>   JSON of StoredRecord, EX ttl when the piece has one
    <kind>:all                   set of "<namespace>/<name>"
    <kind>:index:<index>         set of "<namespace>/<name>"

Writing reads the previous record first (one round trip) so that index sets the record left
are cleaned up; the names in every key were validated when the piece was built.
"""

from __future__ import annotations

import redis

from clusterpulse_core.pieces import RecordDeletion, RecordPiece, StoredRecord
from clusterpulse_core.serde import dumps, loads
from clusterpulse_redis import keys


def _previous_indexes(client: redis.Redis, key: str) -> tuple[str, ...]:
    stored = client.get(key)
    if stored is None:
        return ()
    try:
        value = loads(stored)
    except ValueError:
        return ()
    indexes = value.get("indexes") if isinstance(value, dict) else None
    return tuple(i for i in indexes if isinstance(i, str)) if isinstance(indexes, list) else ()


def write_record(client: redis.Redis, piece: RecordPiece) -> None:
    """Replace the record, join its indexes and leave the ones it no longer names."""
    key = keys.record(piece.key_prefix, piece.record_id)
    stale = set(_previous_indexes(client, key)) - set(piece.indexes)
    pipe = client.pipeline(transaction=False)
    pipe.set(key, dumps(StoredRecord.of(piece)), ex=piece.ttl)
    pipe.sadd(keys.record_index(piece.key_prefix), piece.record_id)
    for index in piece.indexes:
        pipe.sadd(keys.record_index(piece.key_prefix, index), piece.record_id)
    for index in sorted(stale):
        pipe.srem(keys.record_index(piece.key_prefix, index), piece.record_id)
    pipe.execute()


def delete_record(client: redis.Redis, piece: RecordDeletion) -> None:
    """Remove the record and its memberships of ``<kind>:all`` and every index it named."""
    key = keys.record(piece.key_prefix, piece.record_id)
    indexes = _previous_indexes(client, key)
    pipe = client.pipeline(transaction=False)
    pipe.delete(key)
    pipe.srem(keys.record_index(piece.key_prefix), piece.record_id)
    for index in indexes:
        pipe.srem(keys.record_index(piece.key_prefix, index), piece.record_id)
    pipe.execute()
