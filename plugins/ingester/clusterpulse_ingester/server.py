"""The hub's gRPC ingester (docs/compatibility.md#collector-protocol with docs/compatibility.md#c4, #c5): a
``grpc.aio`` server in its own thread.

Every stream must register first; the token is checked against the cluster's credentials
Secret (C4). Each batch becomes the pieces a pull reconcile stores and goes through the same
store fan-out; the ack says whether storing worked. MetricSource changes reach every connected
agent as a ``ConfigUpdate`` (C5).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs
import grpc
from clusterpulse_model import AggregationResults, ClusterMetrics, CollectedResource, HealthVerdict, cluster_health
from clusterpulse_model.fleet import Fleet
from clusterpulse_model.pieces import OperatorsPiece
from cryptography import x509
from cryptography.x509.oid import NameOID
from google.protobuf.message import DecodeError
from prometheus_client import Counter

from clusterpulse_core.clock import utcnow
from clusterpulse_core.context import Runtime
from clusterpulse_core.fence import FencedError
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.limits import Skipped, describe, skipped_metric
from clusterpulse_core.pieces import Piece
from clusterpulse_core.store import StoreError
from clusterpulse_ingester.agents import AgentBook
from clusterpulse_ingester.auth import (
    AuthError,
    HubView,
    bearer_token,
    check_tokens,
)
from clusterpulse_ingester.certs import CertificateError, KeyPair, leaf_names
from clusterpulse_ingester.connections import ConnectionTable
from clusterpulse_ingester.convert import BatchError, BatchLimits, pieces_from_batch
from clusterpulse_ingester.metrics import IngesterMetrics
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc
from clusterpulse_ingester.settings import IngesterSettings
from clusterpulse_ingester.sources import SourceBook
from clusterpulse_ingester.tls import ServingCertificates

log = logging.getLogger(__name__)

#: Ack error prefix of a batch that can never be stored: the agent drops it instead of retrying.
REJECTED = "rejected: "
#: Ack error prefix of a batch that failed to store: the agent keeps it and sends it again.
STORAGE_FAILED = "storage failed: "
STOPPING = "ingester stopping"
#: The only text an agent that is not (or no longer) registered is told; the reason is in the hub's log.
REFUSED = "refused by the ingester; the reason is in the hub's log"
SERVICE = "clusterpulse.collector.v1.CollectorService"
#: The kind whose objects' shard owner takes a cluster's agent (the cluster plugin's kind, by name).
#: Seconds between two checks of every open stream against the hub's caches (a hub change checks its cluster's).
RECHECK_INTERVAL = 0.5
#: The first wait imposed on a peer address after ``auth_failures_before_backoff`` failures, seconds.
FIRST_BACKOFF = 0.5
#: Peer addresses whose failed registrations are remembered (the oldest are forgotten first).
MAX_TRACKED_PEERS = 4096
#: Stored batch ids remembered for duplicate detection (a few per connected agent).
RECENT_BATCHES = 4096


class StartError(Exception):
    """The server could not start (port in use, unreadable TLS key pair)."""


class StoreWorker:
    """Converts and stores batches on one thread, several at a time (group commit).

    Storage backends block (Redis, HTTP), so they cannot run on the event loop; a thread hop
    per batch costs more than the conversion under load. The conversion runs here too, so the
    event loop only serves gRPC. Batches waiting while a store call runs are stored together
    by the next call, and each waiting batch learns the outcome: its own conversion error, or
    the group's store error.
    """

    #: Most batches stored by one call.
    MAX_GROUP = 64

    def __init__(self, put: Callable[..., None], loop: asyncio.AbstractEventLoop) -> None:
        self._put = put
        self._loop = loop
        self._queue: queue.SimpleQueue[tuple[Callable[[], Sequence[Piece]], asyncio.Future[None]] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._run, name="ingester-store", daemon=True)
        self._thread.start()

    def submit(self, pieces: Callable[[], Sequence[Piece]]) -> asyncio.Future[None]:
        """Store what ``pieces()`` returns (with whatever else is waiting); the future fails with
        what it or the store raised. Call on the event loop."""
        future: asyncio.Future[None] = self._loop.create_future()
        self._queue.put((pieces, future))
        return future

    def close(self) -> None:
        """Finish what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join(30)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            group = [item]
            while len(group) < self.MAX_GROUP:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                group.append(more)
            outcomes: list[tuple[asyncio.Future[None], BaseException | None]] = []
            converted: list[tuple[asyncio.Future[None], Sequence[Piece]]] = []
            for make, future in group:
                try:
                    converted.append((future, make()))
                except Exception as exc:
                    outcomes.append((future, exc))
            outcomes.extend(self._store(converted))
            # One wake-up of the event loop per group, not per batch.
            self._loop.call_soon_threadsafe(_settle, outcomes)

    def _store(
        self, converted: Sequence[tuple[asyncio.Future[None], Sequence[Piece]]]
    ) -> list[tuple[asyncio.Future[None], BaseException | None]]:
        """Store the group in one call. A failure that is not the storage's (a StoreError or a
        closed fence, which every batch shares) comes from some batch's content: each batch is
        then stored on its own, so one unstorable batch fails alone."""
        error: BaseException | None = None
        try:
            self._put(*(piece for _, pieces in converted for piece in pieces))
        except (StoreError, FencedError) as exc:
            error = exc
        except Exception as exc:
            if len(converted) == 1:
                error = exc
            else:
                alone: list[tuple[asyncio.Future[None], BaseException | None]] = []
                for future, pieces in converted:
                    try:
                        self._put(*pieces)
                    except Exception as one:
                        alone.append((future, one))
                    else:
                        alone.append((future, None))
                return alone
        return [(future, error) for future, _ in converted]


def _settle(outcomes: Sequence[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    for future, error in outcomes:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def server_options(settings: IngesterSettings) -> list[tuple[str, Any]]:
    """Keepalive (docs/compatibility.md#collector-protocol) and message-size options of the server."""
    return [
        ("grpc.keepalive_time_ms", int(settings.keepalive_time * 1000)),
        ("grpc.keepalive_timeout_ms", int(settings.keepalive_timeout * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", int(settings.min_ping_interval * 1000)),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        # A connection that has not finished its handshake (TLS, HTTP/2 preface) by then is closed.
        ("grpc.server_handshake_timeout_ms", int(settings.register_timeout * 1000)),
    ]


@attrs.define(eq=False)
class _Peer:
    """One agent stream: its context, the lock serialising writes, and what it registered as."""

    context: Any
    #: The task serving the stream: cancelled to end it at once when its registration is revoked.
    task: asyncio.Task[Any] | None = None
    lock: asyncio.Lock = attrs.field(factory=asyncio.Lock)
    stream_id: int | None = None
    cluster: str = ""
    version: str = ""
    #: Digest of the token the stream registered with (checked again on every hub change of its cluster).
    token_digest: bytes = b""
    #: Why the hub revoked the stream (its ClusterConnection deleted, switched to pull, its token changed).
    revoked: str = ""
    #: The peer's address without the port (what per-peer limits and the failure backoff count).
    host: str = ""
    #: Counted among the streams waiting to register.
    unregistered: bool = False


class _Refused(Exception):
    """A stream is ended: ``reason`` labels the metric, the message goes to the hub's log.

    The agent is told the message only once it has registered; before that (and once revoked) it
    gets :data:`REFUSED`, even for the protocol's own texts (docs/compatibility.md#c14).
    """

    def __init__(self, code: grpc.StatusCode, reason: str, message: str) -> None:
        self.code, self.reason = code, reason
        super().__init__(message)


class IngesterServer:
    """Owns the gRPC server, its event loop thread, the connection table and the config pushes."""

    def __init__(
        self,
        settings: IngesterSettings,
        runtime: Runtime,
        table: ConnectionTable,
        book: SourceBook,
        clock: Callable[[], datetime] = utcnow,
        agents: AgentBook | None = None,
    ) -> None:
        self.settings = settings
        #: The hub's ``agent`` decision per cluster, for the status each batch stores.
        self.agents = agents if agents is not None else AgentBook()
        self.runtime = runtime
        self.table = table
        self.book = book
        self.clock = clock
        self.metrics = IngesterMetrics.create(runtime.metrics)
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop_event: asyncio.Event | None = None
        self._peers: set[_Peer] = set()
        #: The registered streams per cluster (what a hub change of one cluster checks again).
        self._by_cluster: dict[str, set[_Peer]] = {}
        self._pushes: set[asyncio.Future[None]] = set()
        self._inflight = 0
        self._stopping = False
        self._worker: StoreWorker | None = None
        self._limits = BatchLimits(settings.max_batch_nodes, settings.max_batch_objects)
        #: Each cluster's last pushed OLM operators, written again when storage loses its data.
        self._operators: dict[str, OperatorsPiece] = {}
        #: The truncation last reported per cluster (logged when it changes, not per batch).
        self._truncation: dict[str, str] = {}
        self._hub_view: HubView | None = None
        #: The cluster plugin's typed view of the clusters (``clusterpulse_fleet``), found at start.
        self._fleet: Fleet | None = None
        self._certificates: ServingCertificates | None = None
        #: Streams not registered yet, per peer address and in all.
        self._unregistered: dict[str, int] = {}
        self._unregistered_total = 0
        #: Refusal reason -> (when it was last logged, refusals not logged since).
        self._refusal_log: dict[str, tuple[float, int]] = {}
        #: Failed registrations per peer address: (consecutive failures, refused until this monotonic time).
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()
        #: (cluster, batch_id) of the latest stored batches: a batch resent after a lost ack is not stored twice.
        self._recent: OrderedDict[tuple[str, str], None] = OrderedDict()
        #: (cluster, batch_id) being stored now: the same batch resent meanwhile waits for this store.
        self._storing: dict[tuple[str, str], asyncio.Future[None]] = {}

    # ------------------------------------------------------------------ lifecycle (any thread)

    def start(self, timeout: float = 30.0) -> int:
        """Start serving; returns the bound port. Raises :class:`StartError`."""
        hook = self.runtime.plugins.hook("clusterpulse_fleet")
        fleet: Fleet | None = hook() if hook is not None else None
        if fleet is None:
            raise StartError(
                "the ingester signs agents in against their ClusterConnections, which no loaded "
                "plugin offers (clusterpulse_fleet): enable the cluster plugin"
            )
        self._fleet = fleet
        self._hub_view = HubView(
            self.runtime.hub,
            self.runtime.config.core,
            fleet,
            self._hub_changed,
            self.settings.collector_token_source,
            self.clock,
        )
        if not self._hub_view.start(timeout):
            log.warning(
                "ingester: the ClusterConnection and Secret caches have not synced in %.0f s; agents are "
                "asked to retry until they have",
                timeout,
            )
        if self.settings.tls_enabled and self._certificates is None:
            certificates = ServingCertificates(
                self.settings, self.runtime.hub, self.runtime.namespace, self.clock, self._bundle_changed
            )
            try:
                certificates.start()
            except CertificateError as exc:
                self._hub_view.stop()
                self._hub_view = None
                raise StartError(str(exc)) from exc
            self._certificates = certificates
        ready = threading.Event()
        errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(ready, errors), name="ingester", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise StartError("ingester did not start in time")
        if errors:
            raise StartError(str(errors[0])) from errors[0]
        log.info(
            "ingester listening on %s:%d (TLS %s)",
            self.settings.bind_address,
            self.port,
            f"on, {self._certificates.source} certificates" if self._certificates is not None else "off",
        )
        self.metrics.plaintext.set(0 if self.settings.tls_enabled else 1)
        if not self.settings.tls_enabled:
            log.warning(
                "ingester TLS is off (INGESTER_TLS_ENABLED=false): collector tokens, batches and "
                "ConfigUpdates travel in plaintext and can be read or changed on the way "
                "(docs/push-mode.md#tls)"
            )
        return self.port

    def stop(self) -> None:
        """Finish in-flight batches (up to ``stop_grace``), then close every stream and the server.

        :meth:`start` may be called again afterwards (same settings, so the same port).
        """
        loop, event = self._loop, self._stop_event
        if loop is not None and event is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:
                pass
        if self._thread is not None:
            self._thread.join(self.settings.stop_grace + 5.0)
            self._thread = None
        if self._hub_view is not None:
            self._hub_view.stop()
            self._hub_view = None
        if self._certificates is not None:
            self._certificates.stop()
            self._certificates = None

    def client_certificate(self, cluster: str, current: KeyPair | None) -> KeyPair | None:
        """A client certificate for ``cluster``'s agent (:meth:`ServingCertificates.client_certificate`); ``None``
        without TLS or with your own certificates."""
        certificates = self._certificates
        return None if certificates is None else certificates.client_certificate(cluster, current)

    def _bundle_changed(self) -> None:
        """The CA bundle changed (renewed or rotated CA): the clusters whose agent is connected are reconciled
        now, so their agents get the new bundle before the new CA issues (the others are reconciled anyway)."""
        for connection in self.table.clusters():
            self.runtime.request_resync(
                f"ingester CA bundle changed: give the agent of {connection.cluster} the new one",
                self._cluster_ref(connection.cluster),
            )

    def health_changed(self, cluster: str) -> None:
        """A pushed batch changed the cluster's health: the hub reconciles it now to patch its status."""
        self.runtime.request_resync(f"health of pushed cluster {cluster} changed", self._cluster_ref(cluster))

    def push_config(self) -> None:
        """Send the current MetricSources to every registered agent (safe from any thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._broadcast)
            except RuntimeError:
                pass

    def _hub_changed(self, cluster: str, token_changed: bool) -> None:
        """A ClusterConnection or Secret of ``cluster`` changed (informer thread): check its open streams again.

        Only that cluster's streams: every status patch of every cluster is such an event, so
        checking all streams each time would cost streams x events look-ups on the event loop.
        ``""`` (a Secret that holds no cluster's token) checks nothing; the periodic pass still
        looks at every stream. A collector token that changed (rotated, or deleted so that it is
        minted again) also queues its cluster, whose reconcile gives the agent the new token now
        rather than at its next interval. A token just added needs no such reconcile: the
        reconcile that minted it is the one handing it to the agent.
        """
        if not cluster:
            return
        if token_changed:
            self.runtime.request_resync(f"collector token of cluster {cluster} changed", self._cluster_ref(cluster))
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._recheck, cluster)
            except RuntimeError:
                pass

    # ------------------------------------------------------------------ event loop

    def _recheck(self, cluster: str | None = None) -> None:
        """End every registered stream (of ``cluster``, else of all) whose registration the hub no longer accepts."""
        view = self._hub_view
        if view is None:
            return
        peers = self._peers if cluster is None else self._by_cluster.get(cluster, ())
        for peer in list(peers):
            if peer.stream_id is None or peer.revoked:
                continue
            try:
                accepted = view.lookup(peer.cluster).accepts(peer.token_digest)
                reason = "" if accepted else "token_changed"
            except AuthError as exc:
                reason = "" if exc.reason == "not_ready" else exc.reason
            if reason:
                self._revoke(peer, reason)

    def _revoke(self, peer: _Peer, reason: str) -> None:
        peer.revoked = reason
        # Unregistered now, so nothing more of this stream is stored even before the task ends.
        self._forget(peer)
        if peer.task is not None:
            peer.task.cancel()

    def _run(self, ready: threading.Event, errors: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(ready, errors))
        finally:
            self._loop = None
            loop.close()

    async def _serve(self, ready: threading.Event, errors: list[BaseException]) -> None:
        self._stop_event = asyncio.Event()
        self._stopping = False
        self._worker = StoreWorker(self.runtime.store.put, asyncio.get_running_loop())
        try:
            server = grpc.aio.server(options=server_options(self.settings))
            add_servicer(server, _Servicer(self), self.metrics.bytes_received)
            address = f"{self.settings.bind_address}:{self.settings.port}"
            if self._certificates is not None:
                port = server.add_secure_port(address, self._certificates.credentials())
            else:
                port = server.add_insecure_port(address)
            if not port:
                raise StartError(f"cannot listen on {address}")
            await server.start()
            self.port = port
        except BaseException as exc:
            errors.append(exc)
            ready.set()
            self._worker.close()
            return
        ready.set()
        while not self._stop_event.is_set():
            # A rotation's grace period ends with no hub change to notice: look at the streams again.
            self._recheck()
            try:
                await asyncio.wait_for(self._stop_event.wait(), RECHECK_INTERVAL)
            except TimeoutError:
                pass
        self._stopping = True
        deadline = time.monotonic() + self.settings.stop_grace
        while self._inflight and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await server.stop(0.5)
        await asyncio.to_thread(self._worker.close)
        log.info("ingester stopped")

    def _broadcast(self) -> None:
        for peer in list(self._peers):
            if peer.stream_id is not None:
                push = asyncio.ensure_future(self._send_config(peer))
                self._pushes.add(push)
                push.add_done_callback(self._pushes.discard)

    async def _send_config(self, peer: _Peer) -> None:
        update = pb.ConfigUpdate(
            metric_sources_json=self.book.documents(), default_interval_seconds=self.settings.agent_collect_interval
        )
        try:
            async with peer.lock:
                await peer.context.write(pb.ConnectResponse(config=update))
            self.metrics.config_updates.inc()
        except Exception as exc:
            log.info("cluster %s: sending a config update failed: %s", peer.cluster, exc)

    # ------------------------------------------------------------------ one stream

    async def connect(self, context: Any) -> None:
        """Serve one ``Connect`` stream until the agent ends it, it is refused or its registration is revoked.

        Until the stream registers it is bounded (docs/push-mode.md#bounds-before-authentication):
        counted against the ingester's and its peer's limits, given ``register_timeout`` to register,
        and a message over ``max_register_bytes`` is refused without being parsed.
        """
        peer = _Peer(context, task=asyncio.current_task(), host=_peer_host(context))
        self._peers.add(peer)
        try:
            self._admit(peer)
            metadata_token = bearer_token(context.invocation_metadata())
            deadline = time.monotonic() + self.settings.register_timeout
            while True:
                if peer.stream_id is None:
                    try:
                        data = await asyncio.wait_for(context.read(), max(deadline - time.monotonic(), 0.0))
                    except TimeoutError:
                        raise _Refused(
                            grpc.StatusCode.DEADLINE_EXCEEDED,
                            "register_timeout",
                            f"no registration within {self.settings.register_timeout:g} s",
                        ) from None
                else:
                    data = await context.read()
                if data is grpc.aio.EOF:
                    break
                await self._handle(peer, self._parse(peer, data), metadata_token)
        except _Refused as refused:
            await self._refuse(peer, refused)
        except asyncio.CancelledError:
            if not peer.revoked:
                raise
            # Cancelled by _revoke: no more message of this stream is read, nor stored.
            await self._refuse(
                peer,
                _Refused(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"revoked_{peer.revoked}",
                    f"cluster {peer.cluster}: registration revoked ({peer.revoked})",
                ),
            )
        finally:
            self._forget(peer)

    def _admit(self, peer: _Peer) -> None:
        """Count a new stream as unregistered, or refuse it when the ingester or its peer has too many."""
        settings = self.settings
        if self._unregistered_total >= settings.max_unregistered_streams:
            raise _Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "too_many_unregistered",
                f"{self._unregistered_total} streams are waiting to register (max_unregistered_streams)",
            )
        if self._unregistered.get(peer.host, 0) >= settings.max_streams_per_peer:
            raise _Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "too_many_from_peer",
                f"{peer.host} has {settings.max_streams_per_peer} streams waiting to register (max_streams_per_peer)",
            )
        peer.unregistered = True
        self._unregistered[peer.host] = self._unregistered.get(peer.host, 0) + 1
        self._unregistered_total += 1
        self.metrics.unregistered.set(self._unregistered_total)

    def _registered(self, peer: _Peer) -> None:
        """The stream no longer counts as unregistered (it registered, or ended)."""
        if not peer.unregistered:
            return
        peer.unregistered = False
        self._unregistered_total -= 1
        self.metrics.unregistered.set(self._unregistered_total)
        left = self._unregistered.get(peer.host, 0) - 1
        if left > 0:
            self._unregistered[peer.host] = left
        else:
            self._unregistered.pop(peer.host, None)

    def _parse(self, peer: _Peer, data: bytes) -> pb.ConnectRequest:
        if peer.stream_id is None and len(data) > self.settings.max_register_bytes:
            raise _Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "oversized",
                f"a {len(data)}-byte message before registration (max_register_bytes "
                f"{self.settings.max_register_bytes})",
            )
        try:
            return pb.ConnectRequest.FromString(data)
        except DecodeError as exc:
            raise _Refused(
                grpc.StatusCode.INVALID_ARGUMENT, "malformed_message", f"not a ConnectRequest: {exc}"
            ) from exc

    async def _refuse(self, peer: _Peer, refused: _Refused) -> None:
        """End the stream: the reason in the hub's log and metrics, a generic text to an unregistered client."""
        self.metrics.streams_rejected.labels(reason=refused.reason).inc()
        self._log_refusal(peer, refused)
        public = peer.stream_id is not None and not peer.revoked
        self._forget(peer)
        await peer.context.abort(refused.code, str(refused) if public else REFUSED)

    def _log_refusal(self, peer: _Peer, refused: _Refused) -> None:
        """One line per reason per second at most: a flood of refusals does not flood the log."""
        now = time.monotonic()
        last, suppressed = self._refusal_log.get(refused.reason, (0.0, 0))
        if now - last < 1.0:
            self._refusal_log[refused.reason] = (last, suppressed + 1)
            return
        self._refusal_log[refused.reason] = (now, 0)
        more = f" ({suppressed} more refused for this reason in the last second)" if suppressed else ""
        log.warning(
            "agent stream from %s refused (%s): %s%s", _peer_address(peer.context), refused.reason, refused, more
        )

    def _forget(self, peer: _Peer) -> None:
        self._peers.discard(peer)
        self._unindex(peer)
        self._registered(peer)
        if peer.stream_id is not None:
            self.table.remove(peer.stream_id)
            peer.stream_id = None
            self.metrics.connected.set(len(self.table))

    def _unindex(self, peer: _Peer) -> None:
        streams = self._by_cluster.get(peer.cluster)
        if streams is not None:
            streams.discard(peer)
            if not streams:
                del self._by_cluster[peer.cluster]

    async def _handle(self, peer: _Peer, request: pb.ConnectRequest, metadata_token: str) -> None:
        kind = request.WhichOneof("payload")
        if kind == "register":
            await self._register(peer, request.register, metadata_token)
        elif kind == "health":
            if peer.stream_id is None:
                raise _Refused(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    "not_registered",
                    "health received before registration",
                )
            self.table.heartbeat(peer.stream_id, self.clock(), request.health.buffered_batches)
        elif kind == "metrics":
            if peer.stream_id is None:
                raise _Refused(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    "not_registered",
                    "metrics received before registration",
                )
            batch = request.metrics
            if batch.cluster_name and batch.cluster_name != peer.cluster:
                raise _Refused(
                    grpc.StatusCode.PERMISSION_DENIED,
                    "other_cluster",
                    f"batch for cluster {batch.cluster_name[:80]!r} on a stream registered as {peer.cluster!r}",
                )
            self._check_held(peer.cluster)
            # In flight until the ack is written, so a graceful stop waits for the ack too.
            self._inflight += 1
            try:
                ack = await self._process(peer, batch)
                async with peer.lock:
                    await peer.context.write(pb.ConnectResponse(ack=ack))
            finally:
                self._inflight -= 1
        else:
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "empty_request", "ConnectRequest without a payload")

    def _failed(self, host: str, failures: int) -> None:
        """Remember a failed registration; past ``auth_failures_before_backoff`` the peer waits, doubling."""
        over = failures - self.settings.auth_failures_before_backoff
        wait = 0.0 if over < 0 else min(self.settings.auth_backoff_max, FIRST_BACKOFF * 2 ** min(over, 30))
        self._failures[host] = (failures, time.monotonic() + wait)
        self._failures.move_to_end(host)
        while len(self._failures) > MAX_TRACKED_PEERS:
            self._failures.popitem(last=False)

    def _check_held(self, cluster: str) -> None:
        """With sharding, only the replica holding the cluster's ClusterConnection takes its agent.

        That replica's reconcile is the one that asks the connection table whether to pull; an
        agent streaming to another replica would be pulled as well. Refused (or, on a stream the
        ring has since moved, cut) with UNAVAILABLE, the agent backs off and reconnects, through
        the Service, until it reaches the holder; its unacked batches stay in its buffer.
        """
        shard = self.runtime.shard
        if shard is not None and not shard.holds(self._cluster_ref(cluster)):
            raise _Refused(
                grpc.StatusCode.UNAVAILABLE,
                "other_replica",
                f"cluster {cluster!r} is held by another replica (sharding): reconnect",
            )

    async def _register(self, peer: _Peer, register: pb.RegisterRequest, metadata_token: str) -> None:
        name = register.cluster_name
        if not name:
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "empty_name", "register: cluster_name is required")
        standby = self.runtime.fence.why_not()
        if standby:
            # A standby replica (behind the same Service) cannot store batches, and its connection
            # table is not the one the leader's reconciles ask: the agent reconnects elsewhere.
            raise _Refused(grpc.StatusCode.UNAVAILABLE, "standby", f"this replica does not store now ({standby})")
        self._check_held(name)
        assert self._hub_view is not None
        failures, until = self._failures.get(peer.host, (0, 0.0))
        if until > time.monotonic():
            raise _Refused(
                grpc.StatusCode.UNAVAILABLE,
                "backoff",
                f"{peer.host}: {failures} failed registrations in a row; refused for "
                f"{until - time.monotonic():.1f} s more",
            )
        if self.settings.require_client_certificates:
            named = certificate_names(peer.context)
            if name not in named:
                self._failed(peer.host, failures + 1)
                raise _Refused(
                    grpc.StatusCode.UNAUTHENTICATED,
                    "certificate_mismatch",
                    f"register as cluster {name[:80]!r} with a client certificate for "
                    f"{', '.join(sorted(named))[:200] or 'no name'}",
                )
        try:
            known = self._hub_view.lookup(name)
            token_digest = check_tokens(known, register.token, metadata_token)
        except AuthError as exc:
            if exc.reason != "not_ready":
                self._failed(peer.host, failures + 1)
            code = grpc.StatusCode.UNAVAILABLE if exc.reason == "not_ready" else grpc.StatusCode.UNAUTHENTICATED
            raise _Refused(code, exc.reason, str(exc)) from exc
        self._failures.pop(peer.host, None)
        self._registered(peer)
        if peer.stream_id is not None:
            self.table.remove(peer.stream_id)
        self.agents.learn(name, known.agent)
        self.agents.learn_endpoint(name, known.endpoint)
        self._unindex(peer)
        peer.cluster, peer.version, peer.token_digest = name, register.version, token_digest
        self._by_cluster.setdefault(name, set()).add(peer)
        peer.stream_id = self.table.register(name, register.version, self.clock())
        self.metrics.connected.set(len(self.table))
        log.info("agent registered: cluster %s, version %s", name, register.version or "?")
        # Reconciled now rather than at its next interval: it stops being pulled, and its status
        # says push is active, with this agent.
        self.runtime.request_resync(f"agent of cluster {name} registered", self._cluster_ref(name))
        await self._send_config(peer)

    async def _process(self, peer: _Peer, batch: pb.MetricsBatch) -> pb.Ack:
        started = time.perf_counter()
        try:
            self.metrics.batches_received.inc()
            now = self.clock()
            if peer.stream_id is not None:
                self.table.heartbeat(peer.stream_id, now)
            if self._stopping:
                return self._reject(batch, "stopping", STOPPING)
            key = (peer.cluster, batch.batch_id)
            if batch.batch_id and key in self._recent:
                # Sent again because its ack was lost: it is stored already.
                self.metrics.batches_acked.inc()
                return pb.Ack(batch_id=batch.batch_id, success=True)
            storing = self._storing.get(key) if batch.batch_id else None
            skipped: list[Skipped] | None = None
            if storing is None:
                assert self._worker is not None
                skipped = []
                storing = self._worker.submit(
                    functools.partial(
                        self._remembered,
                        functools.partial(
                            pieces_from_batch,
                            batch,
                            peer.cluster,
                            now,
                            self.agents.status(peer.cluster, peer.version, now),
                            endpoint=self.agents.endpoint(peer.cluster),
                            display_name=self.agents.display_name(peer.cluster),
                            health=self._health,
                            aggregate=self._aggregate,
                            limits=self._limits,
                            skipped=skipped,
                        ),
                    )
                )
                if batch.batch_id:
                    self._storing[key] = storing
                    storing.add_done_callback(functools.partial(self._stored, key))
            try:
                # Shielded: a stream ended while its batch is stored (a stop past its grace, the
                # agent's ack timeout) does not stop the store, and the batch counts as stored once
                # it is, so the agent's resend is acked rather than stored twice.
                await asyncio.shield(storing)
            except BatchError as exc:
                return self._reject(batch, "malformed", REJECTED + str(exc))
            except (StoreError, FencedError) as exc:
                return self._reject(batch, "storage", STORAGE_FAILED + str(exc))
            except Exception as exc:
                # Not the storage failing (that is a StoreError) but this batch's content (e.g. JSON
                # nested too deeply to encode): it would fail the same way every time, so the agent
                # must drop it rather than send it again.
                return self._reject(
                    batch, "unstorable", f"{REJECTED}the batch cannot be stored: {type(exc).__name__}: {exc}"[:1024]
                )
            if skipped is not None:
                self._report_skipped(peer.cluster, skipped)
            self.metrics.batches_acked.inc()
            return pb.Ack(batch_id=batch.batch_id, success=True)
        finally:
            self.metrics.batch_seconds.observe(time.perf_counter() - started)

    def _cluster_ref(self, name: str) -> ObjectRef:
        """The reference of cluster ``name`` (its ClusterConnection), as the work queue and the shard ring hold it."""
        assert self._fleet is not None, "started"
        return self._fleet.ref(self.runtime.namespace, name)

    def _health(self, metrics: ClusterMetrics) -> HealthVerdict:
        """A pushed cluster's verdict with the cluster plugin's thresholds (the upstream defaults without it)."""
        hook = self.runtime.plugins.hook("clusterpulse_cluster_health")
        verdict: HealthVerdict | None = hook(metrics=metrics) if hook is not None else None
        return verdict if verdict is not None else cluster_health(metrics)

    def _aggregate(self, source_id: str, resources: Sequence[CollectedResource]) -> AggregationResults | None:
        """The hub's aggregations of a pushed source (``None`` without the metricsource plugin: keep the agent's)."""
        hook = self.runtime.plugins.hook("clusterpulse_aggregate_resources")
        results: AggregationResults | None = (
            hook(source_id=source_id, resources=list(resources)) if hook is not None else None
        )
        return results

    def _remembered(self, convert: Callable[[], list[Piece]]) -> list[Piece]:
        """The pieces of a batch; its OLM operators are kept (the agent sends them only when it
        scans, every few minutes) to be written again if storage loses its data."""
        pieces = convert()
        for piece in pieces:
            if isinstance(piece, OperatorsPiece):
                self._operators[piece.cluster] = piece
        return pieces

    def storage_lost(self) -> int:
        """Storage lost its data: write every cluster's last pushed OLM operators again (the other
        keys come back with each agent's next batch). Returns how many clusters; does not wait."""
        pieces = list(self._operators.values())
        loop, worker = self._loop, self._worker
        if not pieces or loop is None or worker is None:
            return 0
        loop.call_soon_threadsafe(lambda: worker.submit(lambda: pieces))
        return len(pieces)

    def _report_skipped(self, cluster: str, skipped: list[Skipped]) -> None:
        """What the stored batch left out: in ``clusterpulse_collection_skipped``, and logged when it changed."""
        skipped_metric(self.runtime.metrics).publish(cluster, skipped)
        note = describe(skipped)
        if note != self._truncation.get(cluster, ""):
            if note:
                log.warning("cluster %s: pushed batch stored truncated: %s", cluster, note)
            else:
                log.info("cluster %s: pushed batches complete again", cluster)
        if note:
            self._truncation[cluster] = note
        else:
            self._truncation.pop(cluster, None)

    def _stored(self, key: tuple[str, str], future: asyncio.Future[None]) -> None:
        """A batch's store ended (whether or not a stream still waits for it): remember it if it worked."""
        self._storing.pop(key, None)
        if not future.cancelled() and future.exception() is None:
            self._remember(key)

    def _remember(self, key: tuple[str, str]) -> None:
        self._recent[key] = None
        while len(self._recent) > RECENT_BATCHES:
            self._recent.popitem(last=False)

    def _reject(self, batch: pb.MetricsBatch, reason: str, message: str) -> pb.Ack:
        self.metrics.batches_rejected.labels(reason=reason).inc()
        log.warning("cluster %s: batch %s not stored: %s", batch.cluster_name, batch.batch_id[:40], message)
        return pb.Ack(batch_id=batch.batch_id, success=False, error=message)


def add_servicer(server: grpc.aio.Server, servicer: pb_grpc.CollectorServiceServicer, received: Counter) -> None:
    """The generated ``add_CollectorServiceServicer_to_server``, counting each message's wire size in ``received``.

    The size is known for free while deserializing; asking the parsed batch (``ByteSize``)
    walks every field again.
    """

    def read_request(data: bytes) -> bytes:
        # Parsed by the stream, which first checks the size against what it may receive now.
        received.inc(len(data))
        return data

    handlers = {
        "Connect": grpc.stream_stream_rpc_method_handler(
            servicer.Connect,
            request_deserializer=read_request,
            response_serializer=pb.ConnectResponse.SerializeToString,
        )
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)


def certificate_names(context: Any) -> set[str]:
    """The names of the client certificate the peer presented (subject alternative DNS names, else the
    common name); empty without one."""
    try:
        pem = (context.auth_context().get("x509_pem_cert") or [b""])[0]
        cert = x509.load_pem_x509_certificate(pem) if pem else None
    except ValueError:
        return set()
    if cert is None:
        return set()
    named = {name for name in leaf_names(cert) if name}
    if not named:
        named = {str(attr.value) for attr in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)}
    return named


def _peer_host(context: Any) -> str:
    """``ipv4:10.0.0.1`` of ``ipv4:10.0.0.1:40000`` (``ipv6:[::1]`` of ``ipv6:[::1]:40000``)."""
    address = _peer_address(context)
    host, sep, port = address.rpartition(":")
    return host if sep and port.isdigit() and host not in ("ipv4", "ipv6") else address


def _peer_address(context: Any) -> str:
    try:
        return str(context.peer())
    except Exception:
        return "?"


class _Servicer(pb_grpc.CollectorServiceServicer):
    """The generated service's one method, delegating to :class:`IngesterServer`."""

    def __init__(self, server: IngesterServer) -> None:
        self._server = server

    async def Connect(self, request_iterator: Any, context: Any) -> None:
        """A bidirectional agent stream."""
        await self._server.connect(context)
