"""The collector agent's loops (docs/compatibility.md#collector-protocol with docs/compatibility.md#c5–#c7).

Collection and delivery are separate: the collect loop runs the plugins' collectors every
``collect_interval`` seconds and puts each batch in the bounded buffer, whether or not the
ingester is reachable; the session loop connects, registers, sends buffered batches oldest
first (one at a time, each removed only when acked) and heartbeats. A lost connection is
retried with jittered exponential backoff; SIGTERM makes one bounded attempt to deliver what
is buffered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge

from clusterpulse_core.clock import utcnow
from clusterpulse_core.collect import ClusterTarget, Collector, run_collectors
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_ingester.agent import sni
from clusterpulse_ingester.agent.backoff import Backoff
from clusterpulse_ingester.agent.buffer import BatchBuffer
from clusterpulse_ingester.convert import batch_from_pieces, timestamp_of
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc
from clusterpulse_ingester.server import REJECTED
from clusterpulse_ingester.settings import IngesterSettings

log = logging.getLogger(__name__)


class SessionEnded(Exception):
    """The stream ended (server closed it, an ack did not come, or a send failed)."""


def channel_options(settings: IngesterSettings) -> list[tuple[str, Any]]:
    """Keepalive (docs/compatibility.md#collector-protocol: ping every 30 s, 10 s timeout, without streams too) and
    message size."""
    options: list[tuple[str, Any]] = [
        ("grpc.keepalive_time_ms", int(settings.keepalive_time * 1000)),
        ("grpc.keepalive_timeout_ms", int(settings.keepalive_timeout * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        # Each session's channel connects afresh: with the process-wide subchannel pool, a new
        # channel inherits the old connection's reconnect backoff and fails at once for up to
        # two minutes although the ingester listens again. The agent backs off itself.
        ("grpc.use_local_subchannel_pool", 1),
    ]
    return options


@contextlib.asynccontextmanager
async def open_channel(settings: IngesterSettings) -> AsyncIterator[grpc.aio.Channel]:
    """The channel of one session: plaintext (the opt-out), or TLS verified against ``INGESTER_TLS_CA`` (else
    the system roots) for the dialled host, or for ``INGESTER_TLS_SERVER_NAME`` when that differs, with the
    SNI still the dialled host (:mod:`clusterpulse_ingester.agent.sni`); with ``INGESTER_TLS_CLIENT_CERT`` the
    agent presents that client certificate (mTLS)."""
    options = channel_options(settings)
    if not settings.tls_enabled:
        async with grpc.aio.insecure_channel(settings.ingester_address, options=options) as channel:
            yield channel
        return
    address = _host_port(settings.ingester_address)
    name = settings.tls_server_name
    if name and address is not None and name.lower() != address[0].lower():
        host, port = address
        async with sni.relay(
            host, port, name, settings.tls_ca, settings.ack_timeout, settings.tls_client_cert, settings.tls_client_key
        ) as target:
            # The relay carries the TLS; gRPC's :authority stays the ingester's address.
            options.append(("grpc.default_authority", settings.ingester_address))
            async with grpc.aio.insecure_channel(target, options=options) as channel:
                yield channel
        return
    if name:
        # A target that is not host:port (dns:///..., a name resolver): gRPC's override, which also sends it as SNI.
        options.append(("grpc.ssl_target_name_override", name))
    roots = Path(settings.tls_ca).read_bytes() if settings.tls_ca else None
    # Read at every session: a renewed CA bundle or client certificate (mounted, updated by the kubelet)
    # is used from the next reconnect on.
    key = Path(settings.tls_client_key).read_bytes() if settings.tls_client_cert else None
    chain = Path(settings.tls_client_cert).read_bytes() if settings.tls_client_cert else None
    credentials = grpc.ssl_channel_credentials(root_certificates=roots, private_key=key, certificate_chain=chain)
    async with grpc.aio.secure_channel(settings.ingester_address, credentials, options=options) as channel:
        yield channel


@attrs.frozen
class AgentMetrics:
    """What the agent counts (served on its /metrics)."""

    collected: Counter
    sent: Counter
    acked: Counter
    dropped: Counter
    buffered: Gauge
    registered: Gauge
    config_updates: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> AgentMetrics:
        """Register the metrics in ``registry``."""
        return cls(
            collected=Counter("clusterpulse_agent_batches_collected_total", "Batches built", registry=registry),
            sent=Counter("clusterpulse_agent_batches_sent_total", "Batches sent to the ingester", registry=registry),
            acked=Counter("clusterpulse_agent_batches_acked_total", "Batches the ingester stored", registry=registry),
            dropped=Counter(
                "clusterpulse_agent_batches_dropped_total",
                "Batches given up: buffer_full (oldest dropped), rejected, too_large",
                ["reason"],
                registry=registry,
            ),
            buffered=Gauge(
                "clusterpulse_agent_buffered_batches", "Batches waiting for the ingester", registry=registry
            ),
            registered=Gauge(
                "clusterpulse_agent_registered", "1 while registered with the ingester", registry=registry
            ),
            config_updates=Counter(
                "clusterpulse_agent_config_updates_total", "ConfigUpdate messages applied", registry=registry
            ),
        )


class Agent:
    """One collector agent: the plugins' collectors against its own cluster, pushed to the ingester."""

    def __init__(
        self,
        settings: IngesterSettings,
        host: PluginHost,
        client: KubeClient,
        registry: CollectorRegistry | None = None,
        version: str = "dev",
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.settings = settings
        self.host = host
        self.version = version
        self.clock = clock
        # On the agent no collector is critical: a failed node listing leaves those fields unset
        # and the rest of the batch is still sent (docs/compatibility.md#collector-protocol).
        self.collectors: Sequence[Collector] = [attrs.evolve(c, critical=False) for c in host.collectors(where="agent")]
        self.client = client
        #: Collector state kept across cycles (e.g. the last OLM scan), as the hub keeps it per cluster.
        self.state: dict[str, Any] = {}
        self.buffer: BatchBuffer[pb.MetricsBatch] = BatchBuffer(settings.buffer_size)
        self.backoff = Backoff(cap=settings.backoff_cap)
        self.metrics = AgentMetrics.create(registry or CollectorRegistry())
        self.interval = settings.collect_interval
        self.started = time.monotonic()
        self._executor = ThreadPoolExecutor(max_workers=max(1, len(self.collectors)), thread_name_prefix="collect")
        self._stop: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None
        self._interval_changed: asyncio.Event | None = None

    # ------------------------------------------------------------------ collecting

    def collect_once(self) -> pb.MetricsBatch:
        """Run every collector once and build the batch (blocking)."""
        collected_at = self.clock()
        target = ClusterTarget(self.settings.cluster_name, "", self.client, self.state)
        report = run_collectors(self.collectors, target, self._executor)
        batch = batch_from_pieces(self.settings.cluster_name, report.pieces, collected_at)
        # The batch is kept from here on (buffered until acked): what collectors wait for "after store".
        for stored in target.after_store:
            stored()
        return batch

    def close(self) -> None:
        """Stop the collector threads (:meth:`run` does it on the way out; a caller of :meth:`collect_once` does)."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def enqueue(self, batch: pb.MetricsBatch) -> None:
        """Buffer a batch (the oldest is dropped and counted when full; an oversized one is refused)."""
        size = batch.ByteSize()
        if size > self.settings.max_message_bytes:
            self.metrics.dropped.labels(reason="too_large").inc()
            log.error(
                "batch %s is %d bytes, over the %d byte limit: dropped",
                batch.batch_id,
                size,
                self.settings.max_message_bytes,
            )
            return
        if self.buffer.push(batch) is not None:
            self.metrics.dropped.labels(reason="buffer_full").inc()
            log.warning("buffer full (%d): dropped the oldest batch", self.buffer.capacity)
        self.metrics.buffered.set(len(self.buffer))
        if self._wake is not None:
            self._wake.set()

    async def _collect_loop(self) -> None:
        assert self._stop is not None and self._interval_changed is not None
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                batch = await asyncio.to_thread(self.collect_once)
                self.metrics.collected.inc()
                self.enqueue(batch)
            except Exception as exc:
                log.error("collection failed: %s", exc)
            self._interval_changed.clear()
            delay = max(0.0, self.interval - (time.monotonic() - started))
            await _wait_any((self._stop, self._interval_changed), delay)

    # ------------------------------------------------------------------ configuration (C5, C6)

    async def apply_config(self, update: pb.ConfigUpdate) -> None:
        """Replace the MetricSources and, when given, the collect interval; no reconnect needed."""
        hook = self.host.hook("clusterpulse_agent_sources")  # declared by this plugin: loaded in the agent
        if hook is not None:
            await asyncio.to_thread(hook, sources=list(update.metric_sources_json), plugins=self.host)
        self.metrics.config_updates.inc()
        if update.default_interval_seconds > 0 and update.default_interval_seconds != self.interval:
            self.interval = float(update.default_interval_seconds)
            if self._interval_changed is not None:
                self._interval_changed.set()
        log.info("config applied: %d MetricSources, interval %ss", len(update.metric_sources_json), self.interval)

    # ------------------------------------------------------------------ delivering

    async def run(self) -> int:
        """Collect and push until :meth:`request_stop`; then one bounded flush. Returns 0."""
        self._stop, self._wake, self._interval_changed = asyncio.Event(), asyncio.Event(), asyncio.Event()
        collecting = asyncio.ensure_future(self._collect_loop())
        try:
            while not self._stop.is_set():
                session = asyncio.ensure_future(self._session())
                stopper = asyncio.ensure_future(self._stop.wait())
                await asyncio.wait({session, stopper}, return_when=asyncio.FIRST_COMPLETED)
                stopper.cancel()
                if not session.done():
                    session.cancel()
                    await asyncio.gather(session, return_exceptions=True)
                    break
                error = session.exception()
                log.warning("session ended: %s", _describe(error) if error else "stream closed")
                await self._back_off(self.backoff.next())
        finally:
            collecting.cancel()
            await asyncio.gather(collecting, return_exceptions=True)
        await self._flush()
        self.close()
        log.info("agent stopped: %s", " ".join(f"{k}={v}" for k, v in self.totals().items()))
        return 0

    async def _back_off(self, delay: float) -> None:
        """Wait ``delay`` seconds before reconnecting, or less once the ingester listens again.

        Every ``reconnect_probe_interval`` (jittered) a TCP connect checks the ingester's
        address; an ingester that was not listening and now is ends the wait after a random
        fraction of the probe interval (so a fleet does not reconnect in lockstep). An ingester
        that listens at the first probe, right after the session failed (it refused the session:
        auth, standby), gets the whole backoff, so probing never turns the backoff into a tight loop.
        """
        assert self._stop is not None
        interval = self.settings.reconnect_probe_interval
        address = _host_port(self.settings.ingester_address)
        end = time.monotonic() + delay
        if interval <= 0 or address is None:
            await _wait_any((self._stop,), delay)
            return
        # Probed at once: the session just failed; only an ingester seen down can be seen back.
        was_down = not await _listening(*address, timeout=min(interval, delay))
        while not self._stop.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return
            await _wait_any((self._stop,), min(left, interval * (0.5 + random.random())))
            if self._stop.is_set() or time.monotonic() >= end:
                return
            if await _listening(*address, timeout=interval):
                if was_down:
                    log.info("ingester %s listens again: reconnecting", self.settings.ingester_address)
                    await _wait_any((self._stop,), interval * random.random())
                    return
            else:
                was_down = True

    def totals(self) -> dict[str, int]:
        """Batches collected, acked, dropped (every reason) and still buffered, so far."""

        def total(counter: Counter) -> int:
            return int(sum(s.value for m in counter.collect() for s in m.samples if s.name.endswith("_total")))

        return {
            "collected": total(self.metrics.collected),
            "acked": total(self.metrics.acked),
            "dropped": total(self.metrics.dropped),
            "buffered": len(self.buffer),
        }

    def request_stop(self) -> None:
        """Stop collecting and deliver what can be delivered within ``flush_timeout``."""
        if self._stop is not None:
            self._stop.set()

    async def _flush(self) -> None:
        if not len(self.buffer):
            return
        try:
            await asyncio.wait_for(self._session(flush=True), self.settings.flush_timeout)
        except Exception as exc:
            log.warning("final flush incomplete (%d batches left): %s", len(self.buffer), _describe(exc))
        else:
            log.info("final flush done")

    async def _session(self, flush: bool = False) -> None:
        self.metrics.registered.set(0)
        async with open_channel(self.settings) as channel:
            stub = pb_grpc.CollectorServiceStub(channel)
            token = self.settings.collector_token
            call = stub.Connect(metadata=(("authorization", f"Bearer {token}"),))
            await call.write(
                pb.ConnectRequest(
                    register=pb.RegisterRequest(
                        cluster_name=self.settings.cluster_name, token=token, version=self.version
                    )
                )
            )
            first = await asyncio.wait_for(call.read(), self.settings.ack_timeout)
            if first is grpc.aio.EOF:
                raise SessionEnded("stream closed by server")
            self.backoff.reset()
            self.metrics.registered.set(1)
            log.info("Registered with ingester %s as %s", self.settings.ingester_address, self.settings.cluster_name)
            acks: dict[str, asyncio.Future[pb.Ack]] = {}
            await self._on_response(first, acks)
            reader = asyncio.ensure_future(self._read_loop(call, acks))
            try:
                await self._send_loop(call, acks, reader, flush)
            finally:
                self.metrics.registered.set(0)
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)
                call.cancel()

    async def _on_response(self, response: pb.ConnectResponse, acks: dict[str, asyncio.Future[pb.Ack]]) -> None:
        kind = response.WhichOneof("payload")
        if kind == "config":
            await self.apply_config(response.config)
        elif kind == "ack":
            future = acks.pop(response.ack.batch_id, None)
            if future is not None and not future.done():
                future.set_result(response.ack)

    async def _read_loop(self, call: Any, acks: dict[str, asyncio.Future[pb.Ack]]) -> None:
        while True:
            response = await call.read()
            if response is grpc.aio.EOF:
                raise SessionEnded("stream closed by server")
            await self._on_response(response, acks)

    async def _send_loop(
        self, call: Any, acks: dict[str, asyncio.Future[pb.Ack]], reader: asyncio.Future[None], flush: bool
    ) -> None:
        assert self._wake is not None
        next_beat = time.monotonic() + self.settings.heartbeat_interval
        while True:
            if reader.done():
                reader.result()
                raise SessionEnded("stream closed by server")
            if time.monotonic() >= next_beat:
                await call.write(pb.ConnectRequest(health=self._health()))
                next_beat = time.monotonic() + self.settings.heartbeat_interval
            batch = self.buffer.pop()
            if batch is None:
                if flush:
                    await call.done_writing()
                    return
                self._wake.clear()
                await _wait_any((self._wake,), max(0.0, next_beat - time.monotonic()), reader)
                continue
            self.metrics.buffered.set(len(self.buffer))
            await self._deliver(call, acks, reader, batch)

    async def _deliver(
        self, call: Any, acks: dict[str, asyncio.Future[pb.Ack]], reader: asyncio.Future[None], batch: pb.MetricsBatch
    ) -> None:
        future: asyncio.Future[pb.Ack] = asyncio.get_running_loop().create_future()
        acks[batch.batch_id] = future
        try:
            await call.write(pb.ConnectRequest(metrics=batch))
            self.metrics.sent.inc()
            await asyncio.wait({future, reader}, timeout=self.settings.ack_timeout, return_when=asyncio.FIRST_COMPLETED)
            if not future.done():
                raise SessionEnded(f"no ack for batch {batch.batch_id} within {self.settings.ack_timeout}s")
        except BaseException:
            acks.pop(batch.batch_id, None)
            self._put_back(batch)
            raise
        ack = future.result()
        if ack.success:
            self.metrics.acked.inc()
            log.debug("Pushed metrics batch %s", batch.batch_id)
        elif ack.error.startswith(REJECTED):
            self.metrics.dropped.labels(reason="rejected").inc()
            log.error("ingester rejected batch %s: %s", batch.batch_id, ack.error)
        else:
            # Not stored (e.g. Redis down on the hub): keep it and try again after a pause.
            log.warning("ingester could not store batch %s: %s", batch.batch_id, ack.error)
            self._put_back(batch)
            await asyncio.sleep(min(self.backoff.nominal(), 5.0))

    def _put_back(self, batch: pb.MetricsBatch) -> None:
        if not self.buffer.push_front(batch):
            self.metrics.dropped.labels(reason="buffer_full").inc()
        self.metrics.buffered.set(len(self.buffer))

    def _health(self) -> pb.HealthReport:
        report = pb.HealthReport(
            cluster_name=self.settings.cluster_name,
            uptime_seconds=int(time.monotonic() - self.started),
            buffered_batches=len(self.buffer),
        )
        report.timestamp.CopyFrom(timestamp_of(self.clock()))
        return report


async def _wait_any(events: Sequence[asyncio.Event], timeout: float, *others: asyncio.Future[Any]) -> None:
    """Wait until one event is set, one of ``others`` is done, or ``timeout`` seconds pass."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait([*waiters, *others], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


def _host_port(address: str) -> tuple[str, int] | None:
    """``host:port`` (``[v6]:port``) of a gRPC target, or None for other target forms."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host or "/" in host:
        return None
    return host.strip("[]"), int(port)


async def _listening(host: str, port: int, timeout: float) -> bool:
    """Whether a TCP connection to ``host:port`` opens within ``timeout`` seconds (closed at once)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (TimeoutError, OSError):
        return False
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return True


def _describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
