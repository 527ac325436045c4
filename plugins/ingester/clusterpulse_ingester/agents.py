"""What ``cluster:<c>:status`` says about a streaming agent: the ``agent`` field the hub's status has.

The hub decides ``deployed`` and ``version`` (docs/agent-deploy.md): ``deployed`` when it installed
the agent, ``version`` the image tag it deployed, else the version the agent reports. The ingester
does not decide them again; it learns the hub's decision where the hub records it:

- from the ClusterConnection's ``status.agent`` when the agent registers (read in the same request
  as the collector token), and
- from every ``cluster:<c>:status`` the cluster reconcile stores afterwards (it receives the store
  fan-out as every backend does), e.g. the hub installing the agent during a pull fallback.

While the stream is live, ``connected`` is true and ``last_heartbeat`` is the batch's receipt time.
A cluster not in push mode gets no ``agent`` field, as its pull writes have none.

The book also keeps each cluster's ``spec.endpoint`` (learnt the same two ways: at register and
from every stored ``cluster:<c>:spec``): a batch without ``api_url`` stores it as its ``api_url``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from clusterpulse_model import AgentStatus
from clusterpulse_model.pieces import ClusterDeletion, ClusterSpecPiece, ClusterStatusPiece

from clusterpulse_core.pieces import Piece

PUSH = "push"


def hub_view(obj: Mapping[str, Any]) -> AgentStatus | None:
    """The hub's decision recorded in a ClusterConnection: ``None`` for a pull cluster.

    A missing or malformed ``status.agent`` reads as "not installed by the hub" (only a JSON
    ``true`` counts as deployed, only a string as a version).
    """
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or spec.get("collectionMode") != PUSH:
        return None
    status = obj.get("status")
    raw = status.get("agent") if isinstance(status, Mapping) else None
    raw = raw if isinstance(raw, Mapping) else {}
    version = raw.get("version")
    return AgentStatus(deployed=raw.get("deployed") is True, version=version if isinstance(version, str) else "")


def streaming_status(view: AgentStatus | None, reported_version: str, now: datetime) -> AgentStatus | None:
    """``agent`` of a status written while the agent streams (the hub's rule, with the stream live)."""
    if view is None:
        return None
    version = view.version if view.deployed else reported_version
    return AgentStatus(deployed=view.deployed, version=version, connected=True, last_heartbeat=now)


_UNKNOWN = object()


class AgentBook:
    """Cluster -> the hub's latest ``agent`` decision; a storage backend so it sees the hub's writes."""

    name = "ingester-agents"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, AgentStatus | None] = {}
        self._endpoints: dict[str, str] = {}
        self._names: dict[str, str] = {}
        self._health: dict[str, str] = {}
        #: Called with a cluster whose stored health changed (the hub then patches its status).
        self.on_health_change: Callable[[str], None] | None = None

    def learn(self, cluster: str, view: AgentStatus | None) -> None:
        """Record the hub's decision for ``cluster`` (``None``: a pull cluster)."""
        with self._lock:
            self._views[cluster] = view

    def learn_endpoint(self, cluster: str, endpoint: str) -> None:
        """Record ``cluster``'s ClusterConnection ``spec.endpoint``."""
        with self._lock:
            self._endpoints[cluster] = endpoint

    def endpoint(self, cluster: str) -> str:
        """``cluster``'s ``spec.endpoint`` as last learnt, or ``""``."""
        with self._lock:
            return self._endpoints.get(cluster, "")

    def display_name(self, cluster: str) -> str:
        """``cluster``'s ``spec.displayName`` as last stored, or ``""``."""
        with self._lock:
            return self._names.get(cluster, "")

    def health(self, cluster: str) -> str:
        """The health of ``cluster``'s latest stored status (``healthy`` before any)."""
        with self._lock:
            return self._health.get(cluster, "healthy")

    def status(self, cluster: str, reported_version: str, now: datetime) -> AgentStatus | None:
        """The ``agent`` field for a batch of ``cluster`` received at ``now``."""
        with self._lock:
            view = self._views.get(cluster, _UNKNOWN)
        if view is _UNKNOWN:
            view = AgentStatus()
        assert view is None or isinstance(view, AgentStatus)
        return streaming_status(view, reported_version, now)

    def store(self, pieces: Sequence[Piece]) -> None:
        """Follow the ``agent`` of every stored cluster status and every stored spec's endpoint;
        forget deleted clusters."""
        changed: list[str] = []
        for piece in pieces:
            if isinstance(piece, ClusterStatusPiece):
                self.learn(piece.cluster, piece.status.agent)
                with self._lock:
                    streamed = piece.status.agent is not None and piece.status.agent.connected
                    if streamed and self._health.get(piece.cluster, "healthy") != piece.status.health:
                        changed.append(piece.cluster)
                    self._health[piece.cluster] = piece.status.health
            elif isinstance(piece, ClusterSpecPiece):
                self.learn_endpoint(piece.cluster, piece.spec.endpoint)
                with self._lock:
                    self._names[piece.cluster] = piece.spec.display_name
            elif isinstance(piece, ClusterDeletion):
                with self._lock:
                    for table in (self._views, self._endpoints, self._names, self._health):
                        table.pop(piece.cluster, None)
        callback = self.on_health_change
        if callback is not None:
            for cluster in dict.fromkeys(changed):
                callback(cluster)

    def ready(self) -> str | None:
        """Always ready: nothing remote."""
        return None

    def close(self) -> None:
        """Nothing to release."""
