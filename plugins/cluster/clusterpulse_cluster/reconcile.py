"""One ClusterConnection reconcile, pull mode (docs/compatibility.md#cluster-reconcile with
docs/compatibility.md#c1–#c3, #c8, #c10)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from clusterpulse_model import (
    HEALTHY_MESSAGE,
    AgentConnection,
    ClusterMetrics,
    ClusterStatusRecord,
    Health,
    HealthVerdict,
    cluster_health,
)
from clusterpulse_model.pieces import (
    ClusterDeletion,
    ClusterInfoPiece,
    ClusterLabelsPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    ClusterSpecPiece,
    ClusterStatusPiece,
    EventPiece,
    NamespacesPiece,
    NodesPiece,
    OperatorsPiece,
)

from clusterpulse_cluster import status as connection_status
from clusterpulse_cluster.agent_deploy.deployer import AgentDeployer, AgentDeployError, ingester_transport
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.olm import LAST_SCAN_KEY
from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_cluster.spec import (
    ClusterConnectionSpec,
    InvalidSpecError,
    api_url,
    clamped,
    connect_timeout,
    decode_spec,
    error_requeue_seconds,
    reconcile_interval,
    validate_spec,
)
from clusterpulse_core import deadline
from clusterpulse_core.breaker import CircuitOpenError
from clusterpulse_core.collect import ClusterTarget, Collector, CriticalCollectorError, run_collectors
from clusterpulse_core.context import MAX_STATUS_MESSAGE, ReconcileContext, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, stored_refs
from clusterpulse_core.kube.client import KubeApiError, KubeClient
from clusterpulse_core.kube.credentials import CredentialsError, TransportWarning, cluster_credentials
from clusterpulse_core.kube.pool import ClusterBusyError
from clusterpulse_core.limits import describe, merged, skipped_metric
from clusterpulse_core.logs import clip
from clusterpulse_core.pieces import Piece
from clusterpulse_core.store import StoreError

#: Threads of the collector pool shared by every reconcile (made on demand, up to this many).
COLLECT_THREADS = 64
#: Name of the critical collector of nodes, cluster metrics and namespaces.
NODES_COLLECTOR = "nodes"
#: Write order of one successful reconcile (docs/compatibility.md#write-order); other pieces follow in collector order.
_PIECE_ORDER: tuple[type[Piece], ...] = (
    NodesPiece,
    ClusterMetricsPiece,
    NamespacesPiece,
    ClusterInfoPiece,
    OperatorsPiece,
    ClusterOperatorsPiece,
)


#: ``InsecureTransport`` reason of a push cluster whose agent talks to the ingester without TLS.
PLAINTEXT_INGESTER = "PlaintextIngester"
PLAINTEXT_MESSAGE = (
    "push mode without TLS (INGESTER_TLS_ENABLED=false): the collector token, batches and "
    "ConfigUpdates travel between agent and ingester in plaintext (docs/push-mode.md#tls)"
)


def _generation(obj: Mapping[str, Any]) -> int:
    generation = (obj.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) else 0


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


class ReconcileFailure(Exception):
    """A handled failure: the cluster is marked unhealthy with this message."""


def reconciled_event(verdict: HealthVerdict, metrics: ClusterMetrics | None, display_name: str) -> dict[str, Any]:
    """The data of a ``cluster.reconciled`` event (docs/readers.md#r7-health)."""
    return {
        "health": verdict.health,
        "nodes": metrics.nodes if metrics else 0,
        "nodes_ready": metrics.nodes_ready if metrics else 0,
        "namespaces": metrics.namespaces if metrics else 0,
        "display_name": display_name,
    }


def ordered(pieces: Sequence[Piece]) -> list[Piece]:
    """Pieces in the write order of docs/compatibility.md#write-order; unknown piece types keep their order, last."""

    def rank(piece: Piece) -> int:
        for index, kind in enumerate(_PIECE_ORDER):
            if isinstance(piece, kind):
                return index
        return len(_PIECE_ORDER)

    return sorted(pieces, key=rank)


class ClusterReconciler:
    """Reconciles ClusterConnections: the :class:`~clusterpulse_core.kinds.Reconciler` the kind declares.

    Keeps per-cluster collector state between reconciles, the collector thread pool and the
    push-mode agent deployer.
    """

    def __init__(self, settings: ClusterSettings, clock: Callable[[], datetime]) -> None:
        self.settings = settings
        self.clock = clock
        self._lock = threading.Lock()
        self._state: dict[str, dict[str, Any]] = {}
        #: Installs/removes push-mode agents on the managed clusters (agent_deploy/).
        self.agents = AgentDeployer(settings, lambda: self.clock())
        self._executor: ThreadPoolExecutor | None = None

    def executor(self) -> ThreadPoolExecutor:
        """The one collector thread pool of every reconcile (not one pool per reconcile)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=COLLECT_THREADS, thread_name_prefix="collect")
            return self._executor

    def close(self) -> None:
        """Shut the collector pool down (running collectors finish on their own)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)

    def cluster_state(self, name: str) -> dict[str, Any]:
        """The scratch dict collectors keep for cluster ``name`` (e.g. the last OLM scan)."""
        with self._lock:
            return self._state.setdefault(name, {})

    def forget_scans(self) -> int:
        """Storage lost its data: forget every cluster's last OLM scan (the next reconcile scans)."""
        with self._lock:
            cleared = sum(1 for state in self._state.values() if state.pop(LAST_SCAN_KEY, None) is not None)
        return cleared

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
        """Reconcile one ClusterConnection with every registered collector (``clusterpulse_collectors``)."""
        return self.reconcile_with(obj, ctx, ctx.runtime.plugins.collectors())

    def reconcile_with(
        self, obj: Mapping[str, Any], ctx: ReconcileContext, collectors: Sequence[Collector]
    ) -> ReconcileResult:
        """Store the spec, collect the cluster, store the pieces, patch the status, say when to return."""
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        raw_status = obj.get("status")
        current: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
        interval = self.settings.reconciliation_interval
        try:
            spec = decode_spec(obj)
            interval = reconcile_interval(self.settings.reconciliation_interval, spec.monitoring.interval)
            self._store_spec(ctx, name, spec)
            validate_spec(spec)
            deferred = self.agents.reconcile(ctx, obj, spec)
            fallback = ""
            if spec.is_push:
                fallback, live_for = self._push_state(ctx, name, current, obj)
                if not fallback:
                    # Back when the agent would count as silent, so a fallback is not late by an interval.
                    return ReconcileResult(requeue_after=min(float(interval), max(1.0, live_for + 0.5)))
            pieces, target = self._collect_within_deadline(ctx, name, namespace, spec, collectors)
            fallback = "; ".join(note for note in (fallback, deferred, clamped(spec)) if note)
        except (InvalidSpecError, ReconcileFailure, AgentDeployError) as exc:
            return self._fail(ctx, name, current, interval, str(exc), obj)
        now = self.clock()
        nodes = next((p for p in pieces if isinstance(p, NodesPiece)), None)
        namespaces = next((p for p in pieces if isinstance(p, NamespacesPiece)), None)
        metrics = next((p.metrics for p in pieces if isinstance(p, ClusterMetricsPiece)), None)
        verdict = (
            cluster_health(metrics, self.settings.health_thresholds())
            if metrics is not None
            else HealthVerdict(Health.HEALTHY.value, HEALTHY_MESSAGE)
        )
        node_count = len(nodes.nodes) if nodes else 0
        namespace_count = len(namespaces.namespaces) if namespaces else 0
        skipped = merged(target.skipped)
        truncation = describe(skipped)
        ctx.store(
            *ordered(pieces),
            ClusterStatusPiece(
                name,
                ClusterStatusRecord(
                    verdict.health,
                    f"{verdict.message}; {truncation}" if truncation else verdict.message,
                    now,
                    self.agents.redis_status(name),
                ),
            ),
            EventPiece(
                "cluster.reconciled", name, reconciled_event(verdict, metrics, spec.display_name), timestamp=now
            ),
        )
        for stored in target.after_store:
            stored()
        insecure = self._insecure(ctx, name, current, obj)
        skipped_metric(ctx.runtime.metrics).publish(name, skipped)
        if truncation and truncation != connection_status.truncation_announced(current):
            ctx.log.warning("collection truncated: %s", truncation)
        self._patch_status(
            ctx,
            current,
            connection_status.connected(
                now, node_count, namespace_count, _generation(obj), current, fallback, verdict, insecure, skipped
            ),
        )
        previous_phase = current.get("phase")
        if previous_phase != connection_status.PHASE_CONNECTED:
            recovered = previous_phase == connection_status.PHASE_ERROR
            ctx.event(
                "Recovered" if recovered else "Connected",
                f"cluster {name} is reachable" + (" again" if recovered else ""),
                uid=_uid(obj),
            )
        self.agents.after_pull(ctx, obj, spec)
        return ReconcileResult(requeue_after=interval)

    def _push_state(
        self, ctx: ReconcileContext, name: str, current: Mapping[str, Any], obj: Mapping[str, Any]
    ) -> tuple[str, float]:
        """Push mode: ``("", seconds)`` when the agent is connected and heard from (status patched),
        with the seconds until it would count as silent; else why we pull.

        The connection table comes from whichever plugin receives agents, through the
        ``clusterpulse_agent_connection`` hook; with none, every push cluster is pulled (C3).
        """
        hook = ctx.runtime.plugins.hook("clusterpulse_agent_connection")  # None: no ingester loaded
        agent: AgentConnection | None = hook(cluster=name) if hook is not None else None
        now = self.clock()
        age = (now - agent.last_heartbeat).total_seconds() if agent is not None else 0.0
        if agent is not None and age <= self.settings.agent_silence_limit:
            patch = connection_status.push_active(
                agent.version,
                agent.last_heartbeat,
                now,
                _generation(obj),
                current,
                agent.health,
                self._insecure(ctx, name, current, obj),
            )
            if any(current.get(key) != value for key, value in patch.items()):
                ctx.patch_status(patch)
            return "", self.settings.agent_silence_limit - age
        disconnected = connection_status.collector_disconnected(current)
        if disconnected is not None:
            ctx.patch_status({"collectorStatus": disconnected})
        reason = (
            connection_status.push_fallback_reason(agent.version, agent.last_heartbeat)
            if agent
            else connection_status.push_fallback_reason("", None)
        )
        ctx.log.info("%s (docs/compatibility.md#c3)", reason)
        return reason, 0.0

    def _store_spec(self, ctx: ReconcileContext, name: str, spec: ClusterConnectionSpec) -> None:
        pieces: list[Piece] = [ClusterSpecPiece(name, spec.record())]
        if spec.labels:
            pieces.append(ClusterLabelsPiece(name, dict(spec.labels)))
        try:
            ctx.store(*pieces)
        except StoreError as exc:
            ctx.log.warning("storing the spec failed: %s", exc)

    def _collect_within_deadline(
        self,
        ctx: ReconcileContext,
        name: str,
        namespace: str,
        spec: ClusterConnectionSpec,
        collectors: Sequence[Collector],
    ) -> tuple[list[Piece], ClusterTarget]:
        """Collect under the reconcile deadline (``monitoring.timeout``, else ``collect_timeout``).

        Every call to the cluster stops at the deadline, and at most ``cluster_max_in_flight``
        reconciles (of any kind) use the cluster at once.
        """
        seconds = spec.monitoring.timeout if spec.monitoring.timeout > 0 else self.settings.collect_timeout
        try:
            with deadline.within(seconds), ctx.runtime.pool.in_flight(name):
                return self._collect(ctx, name, namespace, spec, collectors)
        except ClusterBusyError as exc:
            raise ReconcileFailure(str(exc)) from exc

    def _collect(
        self,
        ctx: ReconcileContext,
        name: str,
        namespace: str,
        spec: ClusterConnectionSpec,
        collectors: Sequence[Collector],
    ) -> tuple[list[Piece], ClusterTarget]:
        client = self._client(ctx, name, namespace, spec)
        timeout = connect_timeout(self.settings.connect_timeout, spec.monitoring.timeout)
        try:
            client.get("/api/v1/namespaces", timeout=timeout, limit=1)
        except Exception as exc:
            raise ReconcileFailure(f"connection test failed: {exc}") from exc
        target = ClusterTarget(name, spec.endpoint, client, self.cluster_state(name))
        try:
            report = run_collectors(collectors, target, self.executor())
        except CriticalCollectorError as exc:
            what = "node metrics" if exc.collector == NODES_COLLECTOR else exc.collector
            raise ReconcileFailure(f"failed to get {what}: {exc}") from exc
        return list(report.pieces), target

    def _client(self, ctx: ReconcileContext, name: str, namespace: str, spec: ClusterConnectionSpec) -> KubeClient:
        secret_namespace = spec.credentials_ref.namespace or namespace
        try:
            credentials = cluster_credentials(
                ctx.hub, api_url(spec.endpoint), secret_namespace, spec.credentials_ref.name, ctx.runtime.secrets
            )
            return ctx.runtime.pool.get(name, credentials)
        except CredentialsError as exc:
            raise ReconcileFailure(f"failed to get cluster client: {exc}") from exc
        except Exception as exc:
            raise ReconcileFailure(f"failed to get cluster client: {type(exc).__name__}: {exc}") from exc

    def _fail(
        self,
        ctx: ReconcileContext,
        name: str,
        current: Mapping[str, Any],
        interval: int,
        message: str,
        obj: Mapping[str, Any],
    ) -> ReconcileResult:
        # A repeating failure is logged when it starts or changes, not on every retry (the status holds it).
        repeated = current.get("phase") == connection_status.PHASE_ERROR and current.get("message") == clip(
            message, MAX_STATUS_MESSAGE
        )
        (ctx.log.debug if repeated else ctx.log.warning)("reconcile failed: %s", message)
        now = self.clock()
        ctx.store(
            ClusterStatusPiece(
                name, ClusterStatusRecord(Health.UNHEALTHY.value, message, now, self.agents.redis_status(name))
            )
        )
        reason = "CircuitOpen" if CircuitOpenError.MESSAGE in message else "ConnectionFailed"
        insecure = self._insecure(ctx, name, current, obj)
        self._patch_status(
            ctx, current, connection_status.failed(message, now, _generation(obj), current, reason, insecure)
        )
        if current.get("phase") != connection_status.PHASE_ERROR or current.get("message") != message:
            ctx.event(reason, message, warning=True, uid=_uid(obj))
        return ReconcileResult(requeue_after=error_requeue_seconds(interval), error=message)

    def _insecure(
        self, ctx: ReconcileContext, name: str, current: Mapping[str, Any], obj: Mapping[str, Any]
    ) -> TransportWarning | None:
        """What weakens the cluster's transport (its Secret's opt-outs; for a push cluster, an ingester
        without TLS); a Warning Event when that is new."""
        insecure = ctx.runtime.pool.insecure(name)
        spec = obj.get("spec")
        push = isinstance(spec, Mapping) and spec.get("collectionMode") == "push"
        if push and not ingester_transport(ctx.runtime.plugins, self.settings, strict=False).tls_enabled:
            plaintext = TransportWarning(PLAINTEXT_INGESTER, PLAINTEXT_MESSAGE)
            insecure = (
                plaintext
                if insecure is None
                else TransportWarning(insecure.reason, f"{insecure.message}; {plaintext.message}")
            )
        if insecure is not None and connection_status.insecure_announced(current) != insecure.message:
            ctx.log.warning("%s", insecure.message)
            ctx.event(connection_status.INSECURE_TRANSPORT, insecure.message, warning=True, uid=_uid(obj))
        return insecure

    @staticmethod
    def _patch_status(
        ctx: ReconcileContext, current: Mapping[str, Any], desired: connection_status.ConnectionStatus
    ) -> None:
        """Patch when something changed, and after every successful sync (``lastSyncTime`` moves).

        A hub that cannot take the patch does not fail the reconcile: the cluster's state is
        stored, and the next reconcile patches again.
        """
        if desired.last_sync_time is None and not desired.differs_from(current):
            return
        try:
            ctx.patch_status(desired.patch())
        except KubeApiError as exc:
            ctx.log.warning("status patch failed (the hub is unreachable?): %s", exc)

    # ------------------------------------------------------------------ deletion

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """The clusters storage holds (``clusters``), in the watch namespace."""
        return stored_refs(runtime, CLUSTER_CONNECTION.kind, "clusters")

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool | ReconcileResult:
        """A ClusterConnection is gone: remove its agent (push mode), then its data, client and state."""
        retry = self.agents.forget(ctx, ref)
        if retry is not None:
            return ReconcileResult(requeue_after=retry)
        self._forget_state(ref, ctx)
        return True

    def _forget_state(self, ref: ObjectRef, ctx: ReconcileContext) -> None:
        """Remove the cluster's stored state, its pooled client and its collector state
        (docs/compatibility.md#cluster-reconcile)."""
        ctx.store(ClusterDeletion(ref.name), EventPiece("cluster.deleted", ref.name, None, timestamp=self.clock()))
        ctx.runtime.pool.remove(ref.name)
        skipped_metric(ctx.runtime.metrics).forget(ref.name)
        with self._lock:
            self._state.pop(ref.name, None)
