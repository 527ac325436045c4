"""The MetricSource definitions agents get (docs/compatibility.md#collector-protocol with docs/compatibility.md#c5,
#c6).

The ingester learns them the way every backend learns state: it receives the store fan-out.
Each stored ``MetricSourcePiece`` is the compiled definition the hub keeps under
``metricsource:<ns>:<name>``; a ``MetricSourceDeletion`` removes it. When the set changes, the
ingester sends a ``ConfigUpdate`` to every connected agent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from clusterpulse_model.pieces import MetricSourceDeletion, MetricSourcePiece

from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import dumps


class SourceBook:
    """A storage backend that keeps the enabled MetricSources as JSON and reports changes."""

    name = "ingester"

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._documents: dict[str, bytes] = {}
        self._versions: dict[str, str] = {}
        self.on_change = on_change

    def documents(self) -> list[bytes]:
        """The JSON of every enabled source, ordered by source id."""
        with self._lock:
            return [self._documents[key] for key in sorted(self._documents)]

    def store(self, pieces: Sequence[Piece]) -> None:
        """Track MetricSource definitions and deletions; other pieces are not ours."""
        changed = False
        with self._lock:
            for piece in pieces:
                if isinstance(piece, MetricSourcePiece):
                    document = dumps(piece.compiled)
                    # A re-reconcile recompiles (new compiledAt) without changing the spec hash.
                    version = piece.hash or document.decode()
                    if self._versions.get(piece.source_id) != version:
                        self._documents[piece.source_id] = document
                        self._versions[piece.source_id] = version
                        changed = True
                elif isinstance(piece, MetricSourceDeletion) and piece.source_id in self._documents:
                    del self._documents[piece.source_id]
                    del self._versions[piece.source_id]
                    changed = True
        if changed and self.on_change is not None:
            self.on_change()

    def ready(self) -> str | None:
        """Always ready: nothing remote."""
        return None

    def close(self) -> None:
        """Nothing to release."""
