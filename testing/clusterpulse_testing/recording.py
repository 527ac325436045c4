"""A storage backend that records what it is given, and a plugin that provides backends.

For plugin tests that check which pieces a reconcile stores without a real store behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, TypeVar

from clusterpulse_core import hookimpl
from clusterpulse_core.pieces import Piece
from clusterpulse_core.store import StorageBackend

P = TypeVar("P", bound=Piece)


class RecordingBackend:
    """Keeps every stored piece in memory, in order (thread-safe)."""

    def __init__(self, name: str = "recording") -> None:
        self.name = name
        self.pieces: list[Piece] = []
        self._lock = threading.Lock()

    def store(self, pieces: Sequence[Piece]) -> None:
        """Keep the pieces."""
        with self._lock:
            self.pieces.extend(pieces)

    def ready(self) -> str | None:
        """Always ready."""
        return None

    def close(self) -> None:
        """Nothing to release."""

    def of(self, piece_type: type[P]) -> list[P]:
        """The kept pieces of one type."""
        with self._lock:
            return [piece for piece in self.pieces if isinstance(piece, piece_type)]

    def clear(self) -> None:
        """Forget what was kept."""
        with self._lock:
            self.pieces.clear()


class BackendPlugin:
    """A plugin contributing the given storage backends through the store hook."""

    def __init__(self, *backends: Any) -> None:
        self.backends: tuple[StorageBackend, ...] = backends

    @property
    def backend(self) -> Any:
        """The first backend."""
        return self.backends[0]

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[StorageBackend]:
        """The backends given at construction."""
        return list(self.backends)
