"""The Redis storage backend: pieces in, the keys of docs/compatibility.md#redis-keys out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

import redis
from clusterpulse_model.pieces import NodesPiece
from redis.exceptions import RedisClusterException

from clusterpulse_core.clock import utcnow
from clusterpulse_core.names import NameGuard
from clusterpulse_core.pieces import Piece
from clusterpulse_redis import keys
from clusterpulse_redis.connection import Client, connect, describe
from clusterpulse_redis.deletion import DELETERS
from clusterpulse_redis.errors import RedisStoreError
from clusterpulse_redis.resp import CommandBatch
from clusterpulse_redis.sending import run_batch, run_cluster_batch
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_redis.writers import WRITERS, WriteContext, Writer

T = TypeVar("T")

#: What a Redis failure raises (a cluster client also raises RedisClusterException, e.g. for a
#: slot no reachable node serves).
REDIS_ERRORS = (redis.RedisError, RedisClusterException)


def _handler(table: Mapping[type[Piece], T], piece: Piece) -> T | None:
    """The entry for the piece's class or its nearest base class listed in ``table``."""
    for cls in type(piece).__mro__:
        found = table.get(cls)
        if found is not None:
            return found
    return None


class RedisStore:
    """Writes every piece it knows (ignores the others), with as few round trips as allowed.

    The writers of one :meth:`store` call queue their commands in one :class:`CommandBatch`
    streamed on one connection (non-transactional, like a pipeline); a deletion (which must
    read first) runs after the writes before it and before the writes after it, so order is
    kept. Any Redis error is raised as :class:`RedisStoreError`; nothing is dropped silently.
    Against a Redis Cluster (``cluster = true`` or a ``redis+cluster://`` URL) the same
    commands, with the same key names, go out as one pipeline per node, grouped by slot.

    ``clock`` returns the store time (tz-aware UTC); tests set a fixed one (the attribute is public so a
    test harness can share its clock with the plugins' collectors).
    """

    name = "redis"

    def __init__(
        self,
        settings: RedisSettings | None = None,
        *,
        client: Client | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.settings = settings or RedisSettings()
        self.client = client if client is not None else connect(self.settings)
        self.address = describe(self.client)
        self.clock = clock
        #: Names that are not valid Kubernetes names are skipped here, before they become keys.
        self.names = NameGuard()

    def store(self, pieces: Sequence[Piece]) -> None:
        """Write the pieces of one reconcile; raise :class:`RedisStoreError` if Redis fails."""
        try:
            ctx = WriteContext(
                now=self.clock(),
                cache_ttl=self.settings.cache_ttl,
                metrics_retention=self.settings.metrics_retention,
                names=self.names,
                previous_nodes=self._previous_nodes(pieces),
            )
            writes: list[tuple[Writer, Piece]] = []
            for piece in pieces:
                writer = _handler(WRITERS, piece)
                if writer is not None:
                    writes.append((writer, piece))
                    continue
                deleter = _handler(DELETERS, piece)
                if deleter is None:
                    continue
                self._write(writes, ctx)
                writes = []
                deleter(self.client, piece)
            self._write(writes, ctx)
        except REDIS_ERRORS as exc:
            raise RedisStoreError(f"redis at {self.address}: {type(exc).__name__}: {exc}") from exc

    def _previous_nodes(self, pieces: Sequence[Piece]) -> dict[str, frozenset[str]]:
        """The stored node set of each cluster whose nodes are about to be written (to prune it)."""
        clusters = sorted({piece.cluster for piece in pieces if isinstance(piece, NodesPiece)})
        if not clusters:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for cluster in clusters:
            pipe.smembers(keys.cluster(cluster, "nodes"))
        found = pipe.execute()
        return {
            cluster: frozenset(m.decode() if isinstance(m, bytes) else str(m) for m in members)
            for cluster, members in zip(clusters, found, strict=True)
        }

    def _write(self, writes: Sequence[tuple[Writer, Piece]], ctx: WriteContext) -> None:
        """Run the writers on one batch (again from the start when a retry resends it)."""
        if not writes:
            return

        def fill(batch: CommandBatch) -> None:
            for writer, piece in writes:
                writer(batch, piece, ctx)

        if isinstance(self.client, redis.RedisCluster):
            run_cluster_batch(self.client, fill)
        else:
            run_batch(self.client, fill)

    def ready(self) -> str | None:
        """``None`` when Redis answers ``PING``, else why not."""
        try:
            self.client.ping()
        except REDIS_ERRORS as exc:
            return f"redis at {self.address} unreachable: {type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        """Close the pooled connections."""
        self.client.close()
        if isinstance(self.client, redis.Redis):
            self.client.connection_pool.disconnect()
