"""The alerts plugin's storage backend: it reads every stored piece and writes none itself.

Pieces update the engine's views; the targets they touched are evaluated and the resulting
alert pieces go back through the store fan-out (``emit``). Alert pieces and events that
come back to this backend are ignored, so it never re-processes its own output.

With sharding a cluster's pieces reach only the replica holding its ClusterConnection. When a
cluster moves, the replica that lost it forgets it (:meth:`AlertsBackend.release_lost`) and the
one that took it over adopts the alerts the other stored, so they continue (and resolve)
without being announced twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from clusterpulse_model.alert import Alert
from clusterpulse_model.fleet import Fleet
from clusterpulse_model.pieces import (
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
    RegistryDeletion,
    RegistryStatusPiece,
)

from clusterpulse_alerts.engine import Engine
from clusterpulse_core.context import Runtime
from clusterpulse_core.pieces import Piece

log = logging.getLogger(__name__)

Emit = Callable[..., None]
#: Pieces that make (or update) a cluster's view.
_CLUSTER_VIEW_PIECES = (
    NodesPiece,
    ClusterStatusPiece,
    ClusterMetricsPiece,
    OperatorsPiece,
    ClusterOperatorsPiece,
    ClusterSpecPiece,
    ClusterLabelsPiece,
    AggregationsPiece,
)


class AlertsBackend:
    """Watches the fan-out; evaluates rules on the targets each store call touched."""

    name = "alerts"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.emit: Emit | None = None
        #: The running runtime (set at start): its shard member, once it has one, and storage.
        self.runtime: Runtime | None = None
        # Keeps alert pieces in evaluation order when several reconciles store at once.
        self._emit_lock = threading.Lock()

    def store(self, pieces: Sequence[Piece]) -> None:
        """Observe the pieces; once started, evaluate what they touched and store the outcome."""
        touched: dict[tuple[str, str], None] = {}
        out: list[Piece] = []
        engine = self.engine
        adopted = self._taken_over(pieces)
        with engine.lock:
            for name, alerts in adopted.items():
                engine.adopt("cluster", name, alerts)
            for piece in pieces:
                out += self._observe(piece, touched)
            if self.emit is not None:
                for kind, name in touched:
                    out += engine.evaluate(kind, name, refresh=True)
        self.send(out)

    def _holds_cluster(self) -> Callable[[str], bool] | None:
        """Sharded: whether this replica holds a cluster's ClusterConnection now; None without sharding."""
        runtime = self.runtime
        shard = runtime.shard if runtime is not None else None  # joins the ring after plugins start
        if runtime is None or shard is None:
            return None
        # The cluster plugin's typed fleet view names a cluster's ClusterConnection; without it no
        # cluster is sharded, so every one is held.
        hook = runtime.plugins.hook("clusterpulse_fleet")
        fleet: Fleet | None = hook() if hook is not None else None
        if fleet is None:
            return None
        namespace = runtime.namespace
        return lambda name: shard.holds(fleet.ref(namespace, name))

    def release_lost(self) -> None:
        """Sharded: forget the clusters whose ClusterConnection this replica no longer holds."""
        holds = self._holds_cluster()
        if holds is None:
            return
        with self.engine.lock:
            for name in [name for name in self.engine.clusters if not holds(name)]:
                self.engine.release("cluster", name)

    def _taken_over(self, pieces: Sequence[Piece]) -> dict[str, list[Alert]]:
        """Sharded: the stored alerts of the clusters these pieces show this engine for the first time.

        Skipped during the restore grace after start: the start-up restore read every alert then.
        """
        engine = self.engine
        runtime = self.runtime
        if runtime is None or runtime.shard is None or engine.in_restore_grace():
            return {}
        names: set[str] = set()
        for piece in pieces:
            if isinstance(piece, _CLUSTER_VIEW_PIECES):
                names.add(piece.cluster)
            elif isinstance(piece, MetricSourceOutcomePiece):
                names.update(piece.collected, piece.failures)
        with engine.lock:
            new = {name for name in names if name not in engine.clusters}
        if not new:
            return {}
        try:
            stored = stored_alerts(runtime)
        except Exception as exc:
            log.warning(
                "cannot read the stored alerts of clusters taken over (%s: %s); those still firing are announced again",
                type(exc).__name__,
                exc,
            )
            return {}
        found: dict[str, list[Alert]] = {name: [] for name in new}
        for alert in stored:
            if alert.cluster in found and engine.target_kind(alert) == "cluster":
                found[alert.cluster].append(alert)
        return found

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
                    metricsource_failures={k: v for k, v in view.metricsource_failures.items() if k != piece.source_id},
                    metricsources_seen=view.metricsources_seen - {piece.source_id},
                )
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


def stored_alerts(runtime: Runtime) -> list[Alert]:
    """Every alert the storage plugins hold as firing (raises when storage cannot be read)."""
    hook = runtime.plugins.hook("clusterpulse_stored_alerts")  # declared by this plugin, so never None here
    return [alert for found in (hook() if hook is not None else ()) for alert in found or ()]
