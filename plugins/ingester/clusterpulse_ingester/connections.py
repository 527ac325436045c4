"""The ingester's connection table: which agent streams are registered, for which cluster."""

from __future__ import annotations

import itertools
import threading
from datetime import datetime

import attrs
from clusterpulse_model import AgentConnection


@attrs.define
class Stream:
    """One registered agent stream."""

    id: int
    cluster: str
    version: str
    connected_at: datetime
    last_heartbeat: datetime
    buffered_batches: int = 0

    def info(self) -> AgentConnection:
        """The immutable view handed to other plugins."""
        return AgentConnection(
            self.cluster, self.version, self.connected_at, self.last_heartbeat, self.buffered_batches
        )


class ConnectionTable:
    """Cluster name -> registered streams (thread-safe: reconciles read it from worker threads).

    Entries are per stream, so when two agents use one cluster name the first to disconnect
    does not hide the other (upstream shares one entry).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[int, Stream] = {}
        self._ids = itertools.count(1)

    def register(self, cluster: str, version: str, now: datetime, stream_id: int | None = None) -> int:
        """Register (or re-register) a stream; returns its id."""
        with self._lock:
            sid = stream_id if stream_id is not None else next(self._ids)
            self._streams[sid] = Stream(sid, cluster, version, now, now)
            return sid

    def heartbeat(self, stream_id: int, now: datetime, buffered: int | None = None) -> None:
        """The stream was heard from."""
        with self._lock:
            stream = self._streams.get(stream_id)
            if stream is not None:
                stream.last_heartbeat = now
                if buffered is not None:
                    stream.buffered_batches = buffered

    def remove(self, stream_id: int) -> None:
        """The stream ended."""
        with self._lock:
            self._streams.pop(stream_id, None)

    def get(self, cluster: str) -> AgentConnection | None:
        """The most recently heard-from stream of ``cluster``."""
        with self._lock:
            streams = [s for s in self._streams.values() if s.cluster == cluster]
            if not streams:
                return None
            return max(streams, key=lambda s: s.last_heartbeat).info()

    def clusters(self) -> list[AgentConnection]:
        """Every registered stream."""
        with self._lock:
            return [s.info() for s in self._streams.values()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._streams)
