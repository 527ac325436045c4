"""What the runtime hands to plugins: the :class:`Runtime` and a per-object :class:`ReconcileContext`."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from prometheus_client import CollectorRegistry

from clusterpulse_core import deadline
from clusterpulse_core.config import Config
from clusterpulse_core.contributions import Contributions
from clusterpulse_core.fence import Fence
from clusterpulse_core.kinds import ObjectRef, ResourceKind
from clusterpulse_core.kube.client import KubeApiError, KubeClient, hub_unreachable
from clusterpulse_core.kube.credentials import SecretCache
from clusterpulse_core.kube.events import EventRecorder
from clusterpulse_core.logs import clip
from clusterpulse_core.pieces import Piece
from clusterpulse_core.store import Store

if TYPE_CHECKING:
    from clusterpulse_core.kube.pool import ClientPool
    from clusterpulse_core.plugins import PluginHost
    from clusterpulse_core.runtime.sharding import ShardMember


@attrs.define
class Runtime:
    """Everything a running manager owns; plugins receive it in ``clusterpulse_start``."""

    config: Config
    plugins: PluginHost
    hub: KubeClient
    store: Store
    pool: ClientPool
    metrics: CollectorRegistry = attrs.field(factory=CollectorRegistry)
    #: The write fence every status patch and store checks (closed on shutdown or a lost Lease).
    fence: Fence = attrs.field(factory=Fence)
    #: The watchdog of this runtime's reconciles: their remote calls, which the manager cuts off
    #: (and only those) when its shutdown grace is over.
    calls: deadline.Watchdog = attrs.field(factory=deadline.Watchdog)
    #: Last good read of every Secret, used while the hub is unreachable.
    secrets: SecretCache = attrs.field(factory=SecretCache)
    #: Kubernetes Events on the hub objects (None: not recorded).
    events: EventRecorder | None = None
    #: With ``sharding = true``: this replica's shard member (what it holds, the live members),
    #: which the reconcile of a ``split_by`` kind asks for its share. None without sharding.
    shard: ShardMember | None = None
    _resync_listeners: list[Callable[[str, ObjectRef | None], None]] = attrs.field(
        factory=list, alias="resync_listeners"
    )
    #: Objects whose last status patch the hub could not take (written again by their next reconcile).
    _deferred_status: set[ObjectRef] = attrs.field(factory=set, alias="deferred_status")
    _deferred_lock: threading.Lock = attrs.field(factory=threading.Lock, alias="deferred_lock")
    #: Whether this replica leads (the manager sets it; None: no manager, treated as leading).
    leader_check: Callable[[], bool] | None = None

    def status_deferred(self, ref: ObjectRef, error: Exception | None) -> bool:
        """Note whether ``ref``'s status patch was deferred (``error``) or went through (None);
        True when this changes the object's state (so the caller logs once per outage, not per try)."""
        with self._deferred_lock:
            if error is None:
                if ref not in self._deferred_status:
                    return False
                self._deferred_status.discard(ref)
                return True
            if ref in self._deferred_status:
                return False
            self._deferred_status.add(ref)
            return True

    @property
    def deferred_statuses(self) -> int:
        """How many objects have a status write waiting for the hub."""
        with self._deferred_lock:
            return len(self._deferred_status)

    def is_leader(self) -> bool:
        """Whether this replica holds the leader Lease (always, without leader election).

        Work only one replica may do (a periodic sweep over shared state) checks it before
        each run; with sharding, only the replica holding the leader Lease leads.
        """
        return True if self.leader_check is None else self.leader_check()

    @property
    def namespace(self) -> str:
        """The watch namespace."""
        return self.config.core.namespace

    @property
    def contributions(self) -> Contributions:
        """Registered functions, aggregations, field types and filter operators."""
        return self.plugins.contributions

    def request_resync(self, reason: str, ref: ObjectRef | None = None) -> None:
        """Ask the manager to queue every object now (a storage backend lost its data, ...), or only
        ``ref`` (a push-mode agent connected to its cluster, ...).

        Safe from any thread; does nothing when no manager is running. The object is reconciled
        by whichever replica may (leader, shard owner), as any queued object is.
        """
        for listener in list(self._resync_listeners):
            listener(reason, ref)

    def storage_lost(self, reason: str) -> None:
        """A storage backend lost its data: every plugin forgets its cached "last done" times
        (``clusterpulse_storage_lost``), then every object is queued again (:meth:`request_resync`)."""
        for plugin, _ in self.plugins.call_each("clusterpulse_storage_lost", runtime=self, reason=reason):
            logging.getLogger(__name__).info("%s: plugin %s reset its cached state", reason, plugin)
        self.request_resync(reason)

    def on_resync_request(self, listener: Callable[[str, ObjectRef | None], None]) -> None:
        """Call ``listener(reason, ref)`` on every :meth:`request_resync` (the manager registers here)."""
        self._resync_listeners.append(listener)

    def context(self, kind: ResourceKind, ref: ObjectRef) -> ReconcileContext:
        """A reconcile context for one object."""
        logger = logging.getLogger(f"clusterpulse.{kind.kind.lower()}")
        return ReconcileContext(self, kind, ref, ObjectLogger(logger, {"object": str(ref)}))


#: Longest ``message`` written into a status (its own and its conditions'), characters.
MAX_STATUS_MESSAGE = 1024


def clip_messages(status: Mapping[str, Any]) -> dict[str, Any]:
    """``status`` with its ``message`` and each condition's ``message`` clipped to
    :data:`MAX_STATUS_MESSAGE` characters (they quote spec fields and remote errors)."""
    out = dict(status)
    if isinstance(out.get("message"), str):
        out["message"] = clip(out["message"], MAX_STATUS_MESSAGE)
    conditions = out.get("conditions")
    if isinstance(conditions, list):
        out["conditions"] = [
            {**c, "message": clip(c["message"], MAX_STATUS_MESSAGE)}
            if isinstance(c, Mapping) and isinstance(c.get("message"), str)
            else c
            for c in conditions
        ]
    return out


class ObjectLogger(logging.LoggerAdapter):  # type: ignore[type-arg, unused-ignore]
    """Prefixes every message with the object's kind, namespace and name."""

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        """Add ``[Kind ns/name]`` in front of the message (and ``object`` to the record)."""
        extra = self.extra or {}
        name = extra.get("object", "?")
        kwargs["extra"] = {**(kwargs.get("extra") or {}), "object": name}
        return f"[{name}] {msg}", kwargs


class ManagedClusterError(Exception):
    """A managed cluster cannot be reached from a reconcile: no plugin knows it, it has no endpoint, bad
    credentials, or every slot of ``cluster_max_in_flight`` taken. The message says which."""


@attrs.frozen
class ManagedClusterAddress:
    """Where a managed cluster is: what ``clusterpulse_managed_cluster`` answers.

    ``endpoint`` is its API server's URL; the Secret ``credentials_namespace/credentials_name`` on
    the hub holds its credentials (key ``token``, and ``ca.crt``).
    """

    endpoint: str
    credentials_namespace: str
    credentials_name: str


@attrs.frozen
class ReconcileContext:
    """Per-object handle passed to ``clusterpulse_reconcile`` and ``clusterpulse_forget``."""

    runtime: Runtime
    kind: ResourceKind
    ref: ObjectRef
    log: ObjectLogger

    @property
    def config(self) -> Config:
        """The validated configuration."""
        return self.runtime.config

    @property
    def hub(self) -> KubeClient:
        """The hub cluster's client."""
        return self.runtime.hub

    def store(self, *pieces: Piece) -> None:
        """Store pieces in every backend (raises StoreError if any failed)."""
        self.runtime.store.put(*pieces)

    @contextlib.contextmanager
    def managed_cluster(self, name: str, *, timeout: float | None = None) -> Iterator[KubeClient]:
        """The client of managed cluster ``name`` (declared in the watch namespace) for a block.

        The cluster is located by ``clusterpulse_managed_cluster`` (the plugin owning the clusters,
        the cluster plugin, answers it).

        The same client the first-party collectors use: from the one pool (one per cluster, rebuilt
        when its endpoint or credentials change), behind the cluster's circuit breaker, with the
        credentials Secret read through the Secret cache (TLS verified against its ``ca.crt``),
        every call bounded by ``request_timeout`` and the block by ``timeout`` seconds when given
        (an earlier reconcile deadline still wins), and holding one of the cluster's
        ``cluster_max_in_flight`` slots. Raises :class:`ManagedClusterError` naming the problem.
        The kind needs ``MANAGED_CLUSTER_ACCESS`` in its ``hub_access`` (``clusterpulse rbac``).
        """
        from clusterpulse_core.kube.credentials import CredentialsError, cluster_credentials
        from clusterpulse_core.kube.pool import ClusterBusyError
        from clusterpulse_core.names import is_dns1123_subdomain

        if not is_dns1123_subdomain(name):
            raise ManagedClusterError(f"invalid cluster name {name[:100]!r}: not a DNS-1123 subdomain")
        namespace = self.config.core.namespace
        locate = self.runtime.plugins.pm.hook.clusterpulse_managed_cluster
        if not locate.get_hookimpls():
            raise ManagedClusterError(
                "no loaded plugin locates managed clusters (clusterpulse_managed_cluster): enable the cluster plugin"
            )
        address = locate(name=name, namespace=namespace, hub=self.hub)
        if address is None:
            raise ManagedClusterError(f"no managed cluster {namespace}/{name}")
        try:
            credentials = cluster_credentials(
                self.hub,
                address.endpoint,
                address.credentials_namespace,
                address.credentials_name,
                self.runtime.secrets,
            )
        except CredentialsError as exc:
            raise ManagedClusterError(f"managed cluster {namespace}/{name}: {exc}") from exc
        try:
            with deadline.within(timeout), self.runtime.pool.in_flight(name):
                yield self.runtime.pool.get(name, credentials)
        except ClusterBusyError as exc:
            raise ManagedClusterError(str(exc)) from exc

    def event(self, reason: str, message: str, *, warning: bool = False, uid: str = "") -> bool:
        """Record a Kubernetes Event on this object (rate-limited per reason); True when written."""
        recorder = self.runtime.events
        if recorder is None:
            return False
        return recorder.record(self.kind, self.ref, reason, message, warning=warning, uid=uid)

    def patch_status(self, status: Mapping[str, Any]) -> Any:
        """Merge-patch ``status`` into the object's status subresource (only the given keys).

        Refused with :class:`clusterpulse_core.fence.FencedError` when this replica may not write;
        under leader election the patch must finish while the Lease hold is still valid.

        A hub that cannot take the patch now (unreachable, deadline, 429, 5xx) does not fail the
        reconcile: the patch is deferred (None is returned, a warning logged once per outage) and
        the object's next reconcile writes its status again, since the hub still shows the old
        one. What was collected is stored either way. An answer about the patch itself (404,
        409, 422) is raised.
        """
        path = self.kind.api_path(self.ref.namespace, self.ref.name)
        suffix = "/status" if self.kind.status_subresource else ""
        fence = self.runtime.fence
        fence.check("status patch")
        status = clip_messages(status)
        try:
            with deadline.within(fence.remaining()):
                result = self.hub.merge_patch(path + suffix, {"status": dict(status)})
        except KubeApiError as exc:
            if not hub_unreachable(exc):
                raise
            if self.runtime.status_deferred(self.ref, exc):
                self.log.warning(
                    "status patch deferred, the hub cannot take it now (%s); the next reconcile writes it again", exc
                )
            return None
        if self.runtime.status_deferred(self.ref, None):
            self.log.info("status patch written again after the hub came back")
        return result
