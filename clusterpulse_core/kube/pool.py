"""The one client pool for managed clusters (docs/compatibility.md#manager)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import attrs

from clusterpulse_core.breaker import CircuitBreaker
from clusterpulse_core.kube.client import DEFAULT_MAX_RESPONSE_BYTES, KubeClient, make_api_client
from clusterpulse_core.kube.credentials import ClusterCredentials, TransportWarning

log = logging.getLogger(__name__)


@attrs.define
class _Entry:
    client: KubeClient
    credentials: ClusterCredentials
    last_used: float


class ClusterBusyError(Exception):
    """Cluster ``name`` already has ``max_in_flight`` reconciles using it (a slow cluster is not piled on)."""


class ClientPool:
    """Thread-safe pool of managed-cluster clients keyed by name, each with its own breaker.

    ``get`` reuses a client while its credentials are unchanged (a changed endpoint, token
    or CA builds a new one), ``remove`` drops one, and clients unused for ``max_idle``
    seconds are closed by :meth:`reap_idle` (the manager calls it every 5 minutes).
    :meth:`in_flight` bounds how many reconciles use one cluster at a time, so a slow cluster
    cannot take every worker of every kind.
    """

    def __init__(
        self,
        max_idle: float = 1800.0,
        timeout: float = 30.0,
        breaker_factory: Callable[[], CircuitBreaker] = CircuitBreaker,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_in_flight: int = 2,
    ) -> None:
        self.max_idle = max_idle
        self.max_in_flight = max_in_flight
        self._in_flight: dict[str, int] = {}
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._breaker_factory = breaker_factory
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._breakers: dict[str, CircuitBreaker] = {}

    def get(self, name: str, credentials: ClusterCredentials) -> KubeClient:
        """The pooled client for ``name``, built (or rebuilt on changed credentials) as needed."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is not None and entry.credentials == credentials:
                entry.last_used = self._clock()
                return entry.client
            if entry is not None:
                del self._entries[name]
                self._close(entry)
            credentials.check_transport()
            breaker = self._breakers.setdefault(name, self._breaker_factory())
            api = make_api_client(
                credentials.endpoint,
                credentials.token,
                ca_pem=credentials.ca_pem,
                verify=not credentials.skip_tls_verify,
            )
            client = KubeClient(api, name=name, timeout=self.timeout, breaker=breaker, max_bytes=self.max_bytes)
            self._entries[name] = _Entry(client, credentials, self._clock())
            return client

    def insecure(self, name: str) -> TransportWarning | None:
        """What weakens the transport of cluster ``name``'s pooled client (None: verified TLS, or no client)."""
        with self._lock:
            entry = self._entries.get(name)
            return entry.credentials.insecure if entry is not None else None

    @contextmanager
    def in_flight(self, name: str) -> Iterator[None]:
        """Hold one of cluster ``name``'s ``max_in_flight`` slots for the block.

        Raises :class:`ClusterBusyError` at once when none is free (never waits).
        """
        with self._lock:
            used = self._in_flight.get(name, 0)
            if used >= self.max_in_flight:
                raise ClusterBusyError(
                    f"cluster {name} already has {used} reconciles in flight (cluster_max_in_flight)"
                )
            self._in_flight[name] = used + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._in_flight.get(name, 1) - 1
                if left > 0:
                    self._in_flight[name] = left
                else:
                    self._in_flight.pop(name, None)

    def breaker(self, name: str) -> CircuitBreaker:
        """The circuit breaker of cluster ``name`` (kept across client rebuilds)."""
        with self._lock:
            return self._breakers.setdefault(name, self._breaker_factory())

    def remove(self, name: str) -> None:
        """Close and forget the client (and breaker) of ``name``; no error when absent."""
        with self._lock:
            entry = self._entries.pop(name, None)
            self._breakers.pop(name, None)
        if entry is not None:
            self._close(entry)

    def reap_idle(self) -> list[str]:
        """Close clients unused for longer than ``max_idle``; return their names."""
        cutoff = self._clock() - self.max_idle
        with self._lock:
            idle = [name for name, entry in self._entries.items() if entry.last_used < cutoff]
            entries = [self._entries.pop(name) for name in idle]
        for entry in entries:
            self._close(entry)
        return idle

    def names(self) -> list[str]:
        """Names of the pooled clients."""
        with self._lock:
            return sorted(self._entries)

    def close(self) -> None:
        """Close every client."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            self._close(entry)

    @staticmethod
    def _close(entry: _Entry) -> None:
        try:
            entry.client.close()
        except Exception:
            log.debug("closing client %s failed", entry.client.name, exc_info=True)
