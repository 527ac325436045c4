"""Turning the pieces of one store call into one batch of import request bodies."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import attrs
from clusterpulse_model.pieces import (
    AggregationsPiece,
    AlertPiece,
    AlertResolution,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    NodesPiece,
    OperatorsPiece,
)

from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.pieces import Piece, RecordPiece
from clusterpulse_vmwriter.lines import (
    alert_line,
    cluster_lines,
    custom_resource_lines,
    node_lines,
    operator_lines,
    record_lines,
)
from clusterpulse_vmwriter.text import LabelPairs

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


@attrs.frozen
class Chunk:
    """One import request body (lines joined with ``\\n`` plus a final ``\\n``) and its sample count."""

    body: bytes
    samples: int


@attrs.frozen
class Batch:
    """Everything one store call produced: one or more request bodies.

    ``stream`` names what was stored (piece kind and target, e.g. ``nodes:prod``); the retry
    queue keeps a bounded number of batches per stream, i.e. per collection cycle of it.
    """

    stream: tuple[str, ...]
    chunks: tuple[Chunk, ...]

    @property
    def samples(self) -> int:
        """Number of samples (lines) in the batch."""
        return sum(chunk.samples for chunk in self.chunks)


def epoch_ms(moment: datetime, fallback_ms: int) -> int:
    """``moment`` in Unix milliseconds (naive means UTC); ``fallback_ms`` for the zero time."""
    if moment == ZERO_TIME or moment.year == 1:
        return fallback_ms
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND


def piece_lines(pieces: Sequence[Piece], received_ms: int, extra: LabelPairs = ()) -> tuple[tuple[str, ...], list[str]]:
    """The stream name and the lines of the pieces the writer understands (others are ignored).

    Timestamps are each piece's collection time (``ClusterMetrics.timestamp``, each
    ``NodeMetrics.timestamp``, ``AggregationResults.computed_at``, ``RecordPiece.timestamp``); operator pieces carry
    none, so they use ``received_ms``, as does any piece whose time is unset.
    """
    extra = tuple(extra)
    stream: list[str] = []
    lines: list[str] = []
    operators: dict[str, OperatorsPiece] = {}
    cluster_operators: dict[str, ClusterOperatorsPiece] = {}
    for piece in pieces:
        if isinstance(piece, ClusterMetricsPiece):
            stream.append(f"cluster:{piece.cluster}")
            lines += cluster_lines(piece.cluster, piece.metrics, epoch_ms(piece.metrics.timestamp, received_ms), extra)
        elif isinstance(piece, NodesPiece):
            stream.append(f"nodes:{piece.cluster}")
            for node in piece.nodes:
                lines += node_lines(piece.cluster, node, epoch_ms(node.timestamp, received_ms), extra)
        elif isinstance(piece, OperatorsPiece):
            operators[piece.cluster] = piece
        elif isinstance(piece, ClusterOperatorsPiece):
            cluster_operators[piece.cluster] = piece
        elif isinstance(piece, AggregationsPiece):
            results = piece.results
            stream.append(f"aggregations:{piece.cluster}:{results.source_id}")
            ts_ms = epoch_ms(results.computed_at, received_ms)
            for name, value in results.values.items():
                lines += custom_resource_lines(name, piece.cluster, results.source_id, value, ts_ms, extra)
        elif isinstance(piece, RecordPiece) and piece.numbers:
            stream.append(f"record:{piece.key_prefix}:{piece.record_id}")
            lines += record_lines(
                piece.kind, piece.namespace, piece.name, piece.numbers, epoch_ms(piece.timestamp, received_ms), extra
            )
        elif isinstance(piece, AlertPiece | AlertResolution):
            if f"alerts:{piece.cluster}" not in stream:
                stream.append(f"alerts:{piece.cluster}")
            lines.append(alert_line(piece.cluster, piece.alert, isinstance(piece, AlertPiece), received_ms, extra))
    # Upstream writes both operator kinds of a cluster in one call: keep that line order.
    for cluster in dict.fromkeys([*operators, *cluster_operators]):
        olm = operators.get(cluster)
        openshift = cluster_operators.get(cluster)
        if olm is not None:
            stream.append(f"operators:{cluster}")
        if openshift is not None:
            stream.append(f"clusteroperators:{cluster}")
        lines += operator_lines(
            cluster,
            olm.operators if olm else None,
            openshift.cluster_operators if openshift else None,
            received_ms,
            extra,
        )
    return tuple(sorted(stream)), lines


def encode_chunks(lines: Sequence[str], batch_size: int) -> tuple[Chunk, ...]:
    """Split lines into request bodies of at most ``batch_size`` lines each."""
    return tuple(
        Chunk(("\n".join(lines[start : start + batch_size]) + "\n").encode(), len(lines[start : start + batch_size]))
        for start in range(0, len(lines), batch_size)
    )


def render_batch(pieces: Sequence[Piece], received_ms: int, batch_size: int, extra: LabelPairs = ()) -> Batch | None:
    """The batch for one store call, or ``None`` when no piece has a time series."""
    stream, lines = piece_lines(pieces, received_ms, extra)
    if not lines:
        return None
    return Batch(stream, encode_chunks(lines, batch_size))
