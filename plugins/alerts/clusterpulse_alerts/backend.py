"""The alerts plugin's storage backend: it reads every stored piece and writes none itself.

Pieces update the engine's views; the targets they touched are evaluated and the resulting
alert pieces go back through the store fan-out (``emit``). Alert pieces and events that
come back to this backend are ignored, so it never re-processes its own output.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from clusterpulse_alerts.engine import Engine
from clusterpulse_core.pieces import (
    AggregationsPiece,
    ClusterDeletion,
    ClusterLabelsPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    ClusterSpecPiece,
    ClusterStatusPiece,
    MetricSourceClusterDeletion,
    MetricSourceDeletion,
    MetricSourceOutcomePiece,
    NodesPiece,
    OperatorsPiece,
    Piece,
    RegistryDeletion,
    RegistryStatusPiece,
)

log = logging.getLogger(__name__)

Emit = Callable[..., None]


class AlertsBackend:
    """Watches the fan-out; evaluates rules on the targets each store call touched."""

    name = "alerts"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.emit: Emit | None = None
        # Keeps alert pieces in evaluation order when several reconciles store at once.
        self._emit_lock = threading.Lock()

    def store(self, pieces: Sequence[Piece]) -> None:
        """Observe the pieces; once started, evaluate what they touched and store the outcome."""
        touched: dict[tuple[str, str], None] = {}
        out: list[Piece] = []
        engine = self.engine
        with engine.lock:
            for piece in pieces:
                out += self._observe(piece, touched)
            if self.emit is not None:
                for kind, name in touched:
                    out += engine.evaluate(kind, name, refresh=True)
        self.send(out)

    def send(self, pieces: Sequence[Piece]) -> None:
        """Store alert pieces through the fan-out; a failure is logged (the next evaluation rewrites)."""
        if not pieces or self.emit is None:
            return
        with self._emit_lock:
            try:
                self.emit(*pieces)
            except Exception as exc:
                log.error("storing %d alert pieces failed: %s", len(pieces), exc)

    def _observe(self, piece: Piece, touched: dict[tuple[str, str], None]) -> list[Piece]:
        engine = self.engine
        if isinstance(piece, NodesPiece):
            engine.update_cluster(piece.cluster, nodes=piece.nodes)
        elif isinstance(piece, ClusterStatusPiece):
            engine.update_cluster(piece.cluster, status=piece.status)
        elif isinstance(piece, ClusterMetricsPiece):
            engine.update_cluster(piece.cluster, metrics=piece.metrics)
        elif isinstance(piece, OperatorsPiece):
            engine.update_cluster(piece.cluster, operators=piece.operators)
        elif isinstance(piece, ClusterOperatorsPiece):
            engine.update_cluster(piece.cluster, cluster_operators=piece.cluster_operators)
        elif isinstance(piece, ClusterSpecPiece):
            engine.update_cluster(piece.cluster, labels=dict(piece.spec.labels))
        elif isinstance(piece, ClusterLabelsPiece):
            engine.update_cluster(piece.cluster, labels=dict(piece.labels))
        elif isinstance(piece, AggregationsPiece):
            view = engine.clusters.get(piece.cluster)
            aggregations = dict(view.aggregations) if view else {}
            aggregations[piece.results.source_id] = dict(piece.results.values)
            engine.update_cluster(piece.cluster, aggregations=aggregations)
        elif isinstance(piece, MetricSourceOutcomePiece):
            for cluster in (*piece.collected, *piece.failures):
                view = engine.clusters.get(cluster)
                failures = dict(view.metricsource_failures) if view else {}
                failures.pop(piece.source_id, None)
                if cluster in piece.failures:
                    failures[piece.source_id] = piece.failures[cluster]
                seen = (view.metricsources_seen if view else frozenset()) | {piece.source_id}
                engine.update_cluster(cluster, metricsource_failures=failures, metricsources_seen=seen)
                touched[("cluster", cluster)] = None
            return []
        elif isinstance(piece, MetricSourceDeletion | MetricSourceClusterDeletion):
            clusters = [piece.cluster] if isinstance(piece, MetricSourceClusterDeletion) else list(engine.clusters)
            for cluster in clusters:
                view = engine.clusters.get(cluster)
                if view is None:
                    continue
                engine.update_cluster(
                    cluster,
                    aggregations={k: v for k, v in view.aggregations.items() if k != piece.source_id},
                    metricsource_failures={k: v for k, v in view.metricsource_failures.items()
                                           if k != piece.source_id},
                    metricsources_seen=view.metricsources_seen - {piece.source_id})
                touched[("cluster", cluster)] = None
            return []
        elif isinstance(piece, RegistryStatusPiece):
            engine.update_registry(piece.registry, status=piece.status)
            touched[("registry", piece.registry)] = None
            return []
        elif isinstance(piece, ClusterDeletion):
            touched.pop(("cluster", piece.cluster), None)
            return engine.drop("cluster", piece.cluster)
        elif isinstance(piece, RegistryDeletion):
            touched.pop(("registry", piece.registry), None)
            return engine.drop("registry", piece.registry)
        else:
            return []  # alert pieces, events and pieces no rule reads
        touched[("cluster", piece.cluster)] = None
        return []

    def ready(self) -> str | None:
        """Always ready: it writes nothing itself."""
        return None

    def close(self) -> None:
        """Nothing to release (the ticker belongs to the plugin)."""
