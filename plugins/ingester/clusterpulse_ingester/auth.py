"""Collector authentication (docs/push-mode.md#authentication): the agent's bearer token against its cluster's token.

The ingester keeps the ClusterConnections and the Secrets of the hub namespace in informer caches
(:class:`HubView`), so checking a token costs no API call: a burst of bad tokens cannot turn into
a burst of hub requests, and a change (a ClusterConnection deleted or switched to pull, a token
rotated) is known within the watch's latency, which is what ends open streams at once.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import threading
from collections.abc import Callable, Iterable
from datetime import datetime

import attrs
from clusterpulse_model import AgentStatus, collector_token
from clusterpulse_model.fleet import Fleet, FleetCluster

from clusterpulse_core.clock import utcnow
from clusterpulse_core.config import CoreSettings
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.kube.credentials import decode_secret_data
from clusterpulse_core.runtime.informer import Informer, Obj, resource_version
from clusterpulse_ingester.agents import hub_view

log = logging.getLogger(__name__)

#: The Secrets the ingester watches on the hub (the clusters' kind comes from the fleet view).
SECRET_KIND = ResourceKind(group="", version="v1", kind="Secret", plural="secrets", schema={})
#: A ClusterConnection name (DNS-1123 subdomain): anything else cannot be a cluster we know.
_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class AuthError(Exception):
    """The stream is refused; ``reason`` is a short label for metrics, the message is for the hub's log."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The token of an ``authorization: Bearer <token>`` metadata entry, or ``""``."""
    for key, value in metadata or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


def valid_cluster_name(name: str) -> bool:
    """Whether ``name`` can name a ClusterConnection (and so a Redis key)."""
    return bool(_CLUSTER_NAME.match(name))


def digest(token: str) -> bytes:
    """What a stream remembers of the token it registered with (never the token itself)."""
    return hashlib.sha256(token.encode()).digest()


@attrs.frozen
class KnownCluster:
    """What registering needs from the hub: the accepted tokens' digests and the hub's ``status.agent`` decision."""

    #: Digests of the tokens accepted now (the current one, and during a rotation's grace the previous one).
    digests: tuple[bytes, ...]
    #: The hub's decision (a push cluster, so never ``None``; see :func:`clusterpulse_ingester.agents.hub_view`).
    agent: AgentStatus | None = None
    #: The ClusterConnection's ``spec.endpoint`` (stored as ``api_url`` when the agent sends none).
    endpoint: str = ""

    def accepts(self, token_digest: bytes) -> bool:
        """Whether a token with this digest is accepted (constant time in the token)."""
        ok = False
        for accepted in self.digests:
            ok |= hmac.compare_digest(accepted, token_digest)
        return ok


def check_tokens(known: KnownCluster, register_token: str, metadata_token: str) -> bytes:
    """Both presented tokens (where present, at least one) must be accepted; returns the token's digest."""
    presented = [t for t in (register_token, metadata_token) if t]
    if not presented:
        raise AuthError("missing_token", "missing collector token")
    ok = True
    for token in presented:
        ok &= known.accepts(digest(token))
    if not ok or len({digest(t) for t in presented}) != 1:
        raise AuthError("bad_token", "invalid collector token")
    return digest(presented[0])


#: What :class:`_Changed` reports of an object.
ADDED, UPDATED, DELETED = "added", "updated", "deleted"


class _Changed:
    """Informer handler: every add, update or delete calls ``notify(obj, change)`` with ``change`` one
    of :data:`ADDED`, :data:`UPDATED`, :data:`DELETED` (the periodic resync does not)."""

    def __init__(self, notify: Callable[[Obj, str], None]) -> None:
        self._notify = notify

    def on_add(self, obj: Obj) -> None:
        """A new object."""
        self._notify(obj, ADDED)

    def on_update(self, old: Obj, new: Obj) -> None:
        """A changed object."""
        self._notify(new, UPDATED)

    def on_delete(self, obj: Obj) -> None:
        """A deleted object."""
        self._notify(obj, DELETED)

    def on_resync(self, obj: Obj) -> None:
        """Nothing changed."""


@attrs.frozen
class _Looked:
    """A look-up's answer and what it was made of (for :meth:`HubView.lookup` to reuse it)."""

    connection_version: str
    secret_namespace: str
    secret_name: str
    secret_version: str
    #: When the answer changes with no hub change: the end of a rotation's grace still ahead.
    until: datetime | None
    known: KnownCluster


class HubView:
    """The clusters (ClusterConnections) and Secrets of the hub namespace, watched; answers token look-ups
    from memory.

    The clusters' objects are read through ``fleet``, the cluster plugin's typed view
    (``clusterpulse_fleet``): its kind is what is watched, and each object is read as a
    :class:`~clusterpulse_model.fleet.FleetCluster`. ``on_change(cluster, token_changed)`` is
    called (on an informer thread) after every change, so the caller can check that cluster's open
    streams again: ``cluster`` is the changed ClusterConnection's name, or for a Secret the cluster
    whose tokens it holds (``""``: nothing of ours); ``token_changed`` is True when that token
    Secret was changed or deleted (not added). Which Secret holds which cluster's token comes from
    the clusters themselves, never from the Secret: an index kept from the ClusterConnection
    events. Until both caches have synced every look-up fails with ``not_ready``.
    """

    def __init__(
        self,
        hub: KubeClient,
        core: CoreSettings,
        fleet: Fleet,
        on_change: Callable[[str, bool], None],
        token_source: str = collector_token.HUB,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.namespace = core.namespace
        self.fleet = fleet
        self.token_source = token_source
        self.clock = clock
        self._connections = Informer.from_settings(hub, fleet.kind, self.namespace, core)
        self._secrets = Informer.from_settings(hub, SECRET_KIND, self.namespace, core)
        self._on_change = on_change
        #: Which push clusters' tokens each Secret ``(namespace, name)`` holds, and the reverse; kept
        #: from the ClusterConnection events so a Secret event decodes no cluster.
        self._holders: dict[tuple[str, str], set[str]] = {}
        self._held: dict[str, tuple[str, str]] = {}
        self._index_lock = threading.Lock()
        self._connections.add_handler(_Changed(self._connection_changed))
        self._secrets.add_handler(_Changed(self._secret_changed))
        #: Per cluster, the last answer of :meth:`lookup`, reused while its objects are unchanged.
        self._looked: dict[str, _Looked] = {}

    def _connection_changed(self, obj: Obj, change: str) -> None:
        known = self.fleet.cluster(obj)
        with self._index_lock:
            previous = self._held.pop(known.name, None)
            if previous is not None:
                holders = self._holders.get(previous, set())
                holders.discard(known.name)
                if not holders:
                    self._holders.pop(previous, None)
            if known.push and change != DELETED:
                held = self.token_secret(known)
                self._held[known.name] = held
                self._holders.setdefault(held, set()).add(known.name)
        self._on_change(known.name, False)

    def _secret_changed(self, obj: Obj, change: str) -> None:
        holding = self._holding(obj)
        for cluster in holding:
            self._on_change(cluster, change != ADDED)
        if not holding:
            self._on_change("", False)

    def _holding(self, secret: Obj) -> list[str]:
        meta = secret.get("metadata") or {}
        held = (str(meta.get("namespace") or self.namespace), str(meta.get("name") or ""))
        with self._index_lock:
            return sorted(self._holders.get(held, ()))

    def start(self, timeout: float) -> bool:
        """Start both informers; True when both synced within ``timeout`` seconds."""
        self._connections.start()
        self._secrets.start()
        return self._connections.wait_synced(timeout) and self._secrets.wait_synced(timeout)

    def stop(self) -> None:
        """Stop both informers."""
        self._connections.stop()
        self._secrets.stop()

    def token_secret(self, cluster: FleetCluster) -> tuple[str, str]:
        """The namespace and name of the Secret holding ``cluster``'s accepted tokens."""
        if self.token_source == collector_token.HUB:
            return self.namespace, collector_token.secret_name(cluster.name)
        return cluster.credentials.namespace, cluster.credentials.name

    def token_of(self, secret: Obj) -> str:
        """The push cluster whose accepted tokens ``secret`` holds, or ``""`` (the first by name when
        several clusters share one credentials Secret)."""
        holding = self._holding(secret)
        return holding[0] if holding else ""

    def lookup(self, cluster: str) -> KnownCluster:
        """The tokens accepted for ``cluster`` now; :class:`AuthError` when it is not a push cluster we know.

        The answer is kept and given again while the ClusterConnection and its token Secret keep
        their ``resourceVersion`` and no rotation's grace has ended since: the ingester checks
        every open stream twice a second, and reading the objects again each time cost more CPU
        than the batches (``benchmarks/bench_ingester.py``).
        """
        if not valid_cluster_name(cluster):
            raise AuthError("invalid_name", f"cluster name {cluster[:80]!r} is not a valid ClusterConnection name")
        if not (self._connections.has_synced and self._secrets.has_synced):
            raise AuthError("not_ready", "the ingester's ClusterConnection and Secret caches have not synced yet")
        obj = self._connections.get(self.namespace, cluster)
        if obj is None:
            self._looked.pop(cluster, None)
            raise AuthError(
                "unknown_cluster", f"unknown cluster {cluster!r}: no ClusterConnection {self.namespace}/{cluster}"
            )
        looked = self._looked.get(cluster)
        if looked is not None and looked.connection_version == resource_version(obj):
            secret = self._secrets.get(looked.secret_namespace, looked.secret_name)
            if (
                secret is not None
                and resource_version(secret) == looked.secret_version
                and (looked.until is None or self.clock() < looked.until)
            ):
                return looked.known
        self._looked.pop(cluster, None)
        known = self.fleet.cluster(obj)
        agent = hub_view(known)
        if agent is None:
            raise AuthError("not_push", f"cluster {cluster!r} is not in collectionMode push")
        namespace, name = self.token_secret(known)
        if namespace != self.namespace:
            raise AuthError(
                "no_token",
                f"cluster {cluster!r}: its token Secret {namespace}/{name} is outside "
                f"the hub namespace {self.namespace}",
            )
        secret = self._secrets.get(namespace, name) if name else None
        if secret is None:
            raise AuthError("no_token", f"cluster {cluster!r}: no Secret {namespace}/{name or '(unnamed)'}")
        data = decode_secret_data(secret)
        now = self.clock()
        tokens = collector_token.accepted(data, now)
        if not tokens:
            raise AuthError("no_token", f"cluster {cluster!r}: Secret {namespace}/{name} has no token")
        answer = KnownCluster(tuple(digest(t) for t in tokens), agent, known.endpoint)
        versions = resource_version(obj), resource_version(secret)
        if all(versions):
            grace = collector_token.grace_ends(data)
            until = grace if grace is not None and now < grace else None
            self._looked[cluster] = _Looked(versions[0], namespace, name, versions[1], until, answer)
        return answer
