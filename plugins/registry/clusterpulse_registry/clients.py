"""One :class:`RegistryClient` per RegistryConnection, reused while its connection settings hold."""

from __future__ import annotations

import threading

import attrs

from clusterpulse_registry.auth import Credentials
from clusterpulse_registry.client import RegistryClient


@attrs.frozen
class ClientSettings:
    """What a client is built from; a change means a new client (new pool, no old tokens)."""

    base_url: str
    verify: bool
    credentials: Credentials
    #: ``spec.insecure``: a plain-HTTP registry, whose token realm may be ``http://`` too.
    insecure: bool = False
    #: ``token_realm_hosts``: token services outside the registry's origin that may get the credentials.
    realm_hosts: frozenset[str] = frozenset()


class ClientCache:
    """Registry clients by object key (``namespace/name``), thread-safe."""

    def __init__(self) -> None:
        self._clients: dict[str, tuple[ClientSettings, RegistryClient]] = {}
        self._lock = threading.Lock()

    def client(self, key: str, settings: ClientSettings) -> tuple[RegistryClient, bool]:
        """The client for ``key`` and whether it is new (first use, or its settings changed)."""
        with self._lock:
            entry = self._clients.get(key)
            if entry is not None and entry[0] == settings:
                return entry[1], False
            if entry is not None:
                entry[1].close()
            client = RegistryClient(
                settings.base_url, settings.verify, settings.credentials, settings.insecure, settings.realm_hosts
            )
            self._clients[key] = (settings, client)
            return client, True

    def drop(self, key: str) -> None:
        """Close and forget the client of a deleted object."""
        with self._lock:
            entry = self._clients.pop(key, None)
        if entry is not None:
            entry[1].close()

    def close(self) -> None:
        """Close every client."""
        with self._lock:
            entries, self._clients = list(self._clients.values()), {}
        for _, client in entries:
            client.close()

    def __len__(self) -> int:
        return len(self._clients)
