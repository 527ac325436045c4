"""Storage fan-out: every enabled backend receives every stored piece."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from prometheus_client import CollectorRegistry, Counter

from clusterpulse_core.fence import Fence
from clusterpulse_core.pieces import Piece

log = logging.getLogger(__name__)


@runtime_checkable
class StorageBackend(Protocol):
    """A place state is written to (Redis, VictoriaMetrics...), provided by a plugin."""

    #: Short name used in logs and metrics (``redis``, ``vmwriter``).
    name: str

    def store(self, pieces: Sequence[Piece]) -> None:
        """Write the pieces of one reconcile (ignore unknown piece types); raise on failure."""

    def ready(self) -> str | None:
        """``None`` when the backend can accept writes, else why not (shown by ``/readyz``)."""

    def close(self) -> None:
        """Release connections and threads."""


class StoreError(Exception):
    """One or more backends failed to store; the others did store. Carries each cause."""

    def __init__(self, failures: Sequence[tuple[str, BaseException]]) -> None:
        self.failures = list(failures)
        detail = "; ".join(f"{name}: {exc}" for name, exc in self.failures)
        super().__init__(f"storage failed: {detail}")


class Store:
    """Fans pieces out to every backend; a failing backend never stops the others."""

    def __init__(
        self, backends: Sequence[StorageBackend], registry: CollectorRegistry | None = None, fence: Fence | None = None
    ) -> None:
        self.backends = list(backends)
        #: Checked before every fan-out: a fenced replica stores nothing.
        self.fence = fence or Fence()
        self._errors = Counter(
            "clusterpulse_store_errors_total",
            "Failed store calls per backend",
            ["backend"],
            registry=registry,
        )

    def put(self, *pieces: Piece) -> None:
        """Store pieces in every backend; raise :class:`StoreError` if any backend failed.

        Raises :class:`clusterpulse_core.fence.FencedError` (storing nothing) when this replica
        may not write.
        """
        if not pieces:
            return
        self.fence.check("store")
        failures: list[tuple[str, BaseException]] = []
        for backend in self.backends:
            try:
                backend.store(pieces)
            except Exception as exc:
                log.error("storage backend %s failed: %s", backend.name, exc)
                self._errors.labels(backend=backend.name).inc()
                failures.append((backend.name, exc))
        if failures:
            raise StoreError(failures)

    def ready(self) -> list[str]:
        """Why backends are not ready (empty when all are)."""
        problems = []
        for backend in self.backends:
            try:
                problem = backend.ready()
            except Exception as exc:
                problem = str(exc)
            if problem:
                problems.append(f"{backend.name}: {problem}")
        return problems

    def close(self) -> None:
        """Close every backend, logging (not raising) failures."""
        for backend in self.backends:
            try:
                backend.close()
            except Exception:
                log.exception("closing storage backend %s failed", backend.name)
