"""Resource names from API discovery (M7): the kind's real plural on the target cluster."""

from __future__ import annotations

import threading
import time

import msgspec

from clusterpulse_core.breaker import CircuitOpenError
from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError

#: How long a discovery answer is reused.
CACHE_SECONDS = 300.0


class _APIResource(msgspec.Struct, gc=False):
    name: str = ""
    kind: str = ""


class _ResourceList(msgspec.Struct, gc=False):
    resources: list[_APIResource] | None = None


_resource_list = msgspec.json.Decoder(_ResourceList)


class Discovery:
    """Looks kinds up in ``/api/<v>`` or ``/apis/<g>/<v>``, caching each answer per server."""

    def __init__(self, cache_seconds: float = CACHE_SECONDS) -> None:
        self.cache_seconds = cache_seconds
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], tuple[float, dict[str, str]]] = {}

    def resource_for(
        self, client: KubeClient, group: str, version: str, kind: str, timeout: float | None = None
    ) -> str | None:
        """The plural serving ``kind`` in ``group/version``, or None when discovery cannot tell."""
        kinds = self._kinds(client, group, version, timeout)
        return kinds.get(kind) if kinds is not None else None

    def serves(
        self, client: KubeClient, group: str, version: str, kind: str, timeout: float | None = None
    ) -> bool | None:
        """Whether the server serves ``kind`` in ``group/version``; None when discovery cannot tell."""
        kinds = self._kinds(client, group, version, timeout)
        return None if kinds is None else kind in kinds

    def _kinds(self, client: KubeClient, group: str, version: str, timeout: float | None) -> dict[str, str] | None:
        key = (client.host, group, version)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self.cache_seconds:
            return cached[1]
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            body = client.get_bytes(path, timeout=timeout)
            listing = _resource_list.decode(body)
        except NotFoundError:
            listing = _ResourceList(resources=[])  # the group/version is not served at all
        except (KubeApiError, CircuitOpenError, msgspec.DecodeError):
            return None
        kinds = {r.kind: r.name for r in listing.resources or () if "/" not in r.name and r.kind}
        with self._lock:
            self._cache[key] = (now, kinds)
        return kinds
