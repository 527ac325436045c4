"""Reading the Secrets that resources reference (cluster tokens, registry passwords).

Reads go through a :class:`SecretCache` of the last good answer: while the hub cannot be
reached (transport failure, timeout, 5xx, 429) the cached credentials are used, so a hub outage
does not make every managed cluster look unhealthy. A Secret the hub says is gone (404) is
dropped from the cache and reported. Secret values are never logged.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Mapping

import attrs

from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError, hub_unreachable

log = logging.getLogger(__name__)


class CredentialsError(Exception):
    """A referenced Secret is missing, unreadable or lacks a required key; names the Secret."""


@attrs.frozen
class ClusterCredentials:
    """How to reach a managed cluster: endpoint, bearer token and optional CA bundle."""

    endpoint: str
    token: str
    ca_pem: str = ""


class SecretCache:
    """The last good read of each Secret, used while the hub is unreachable."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[tuple[str, str], dict[str, str]] = {}
        self._stale: set[tuple[str, str]] = set()

    def put(self, namespace: str, name: str, data: Mapping[str, str]) -> None:
        """Remember a good read."""
        with self._lock:
            self._data[(namespace, name)] = dict(data)
            self._stale.discard((namespace, name))

    def drop(self, namespace: str, name: str) -> None:
        """Forget a Secret (it is gone)."""
        with self._lock:
            self._data.pop((namespace, name), None)
            self._stale.discard((namespace, name))

    def fallback(self, namespace: str, name: str, error: Exception) -> dict[str, str] | None:
        """The cached data while the hub fails with ``error`` (warned once per outage), or None."""
        with self._lock:
            data = self._data.get((namespace, name))
            first = data is not None and (namespace, name) not in self._stale
            if data is not None:
                self._stale.add((namespace, name))
        if first:
            log.warning("hub unreachable reading secret %s/%s (%s): using the last good read", namespace, name,
                        error)
        return dict(data) if data is not None else None


def read_secret(hub: KubeClient, namespace: str, name: str, cache: SecretCache | None = None) -> dict[str, str]:
    """The Secret's ``data`` decoded from base64 (and ``stringData`` if present) as text.

    With a ``cache``, a hub that cannot be reached answers from the last good read.
    """
    try:
        secret = hub.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
    except NotFoundError as exc:
        if cache is not None:
            cache.drop(namespace, name)
        raise CredentialsError(f"failed to get secret: secret {namespace}/{name} not found") from exc
    except KubeApiError as exc:
        cached = cache.fallback(namespace, name, exc) if cache is not None and hub_unreachable(exc) else None
        if cached is not None:
            return cached
        raise CredentialsError(f"failed to get secret: secret {namespace}/{name}: {exc}") from exc
    data = decode_secret_data(secret)
    if cache is not None:
        cache.put(namespace, name, data)
    return data


def decode_secret_data(secret: Mapping[str, object]) -> dict[str, str]:
    """Decode a Secret object's ``data`` (base64) merged with ``stringData`` (plain)."""
    out: dict[str, str] = {}
    for key, value in dict(secret.get("data") or {}).items():  # type: ignore[call-overload]
        try:
            out[key] = base64.b64decode(str(value)).decode()
        except (ValueError, UnicodeDecodeError):
            out[key] = ""
    for key, value in dict(secret.get("stringData") or {}).items():  # type: ignore[call-overload]
        out[key] = str(value)
    return out


def cluster_credentials(hub: KubeClient, endpoint: str, namespace: str, name: str,
                        cache: SecretCache | None = None) -> ClusterCredentials:
    """Token (required, key ``token``) and CA (optional, key ``ca.crt``) from a Secret."""
    data = read_secret(hub, namespace, name, cache)
    token = data.get("token", "")
    if not token:
        raise CredentialsError(f"no token found in secret {namespace}/{name}")
    return ClusterCredentials(endpoint=endpoint, token=token, ca_pem=data.get("ca.crt", ""))
