"""Installs, upgrades and removes the collector agent of push-mode ClusterConnections.

* A push-mode ClusterConnection gets the finalizer :data:`FINALIZER`, then the
docs/compatibility.md#agent-deployment objects
  on its cluster. While its agent is not connected every reconcile checks them (reads only
  when nothing changed, docs/compatibility.md#c12) and a failure is the reconcile's error; while it is
  connected they are re-applied only when what the hub wants changed (image tag, token,
  MetricSource resource types, TLS), so a version change rolls the Deployment even under a
  running agent, and a failure is only logged.
* Deletion, or a switch to pull, removes every object the hub created there, then the
  finalizer. An unreachable cluster holds a deletion at most ``agent_removal_timeout``
  seconds; then the finalizer goes anyway and the leftovers are named in a Warning Event on
  the ClusterConnection and in the log.
* Every ``agent_sweep_interval`` seconds, a reconcile also checks its cluster for agent
  objects whose owning ClusterConnection no longer exists (deleted while the controller was
  down, finalizer removed by hand) and removes them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import attrs
from clusterpulse_model import AgentCertificate, AgentStatus, IngesterTransport, collector_token

from clusterpulse_cluster.agent_deploy.apply import (
    REMOTE_ERRORS,
    UNCHANGED,
    AgentDeferred,
    AgentDeployError,
    Applier,
    covers,
)
from clusterpulse_cluster.agent_deploy.objects import (
    AGENT_NAMESPACE,
    CLIENT_CERT_SECRET,
    REMOVAL_ORDER,
    Owner,
    describe_ref,
    owner_of,
    to_wire,
)
from clusterpulse_cluster.agent_deploy.plan import AgentPlan, controller_version, image_ref, image_tag
from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_cluster.spec import ClusterConnectionSpec, api_url, connect_timeout
from clusterpulse_core.context import ReconcileContext
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError
from clusterpulse_core.kube.credentials import (
    ClusterCredentials,
    CredentialsError,
    cluster_credentials,
    decode_secret_data,
)
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.serde import format_time, parse_time, unstructure, wire

FINALIZER = "clusterpulse.io/agent-cleanup"
#: Seconds between removal attempts while a deletion waits for an unreachable cluster.
REMOVAL_RETRY_SECONDS = 10.0


@wire(case="camel", omit_empty=("last_heartbeat",))
@attrs.frozen
class AgentStatusField:
    """``status.agent`` of a ClusterConnection."""

    deployed: bool
    version: str = ""
    connected: bool = False
    last_heartbeat: str = ""

    def differs_from(self, current: Any) -> bool:
        """Whether a patch would change more than ``lastHeartbeat`` (heartbeats alone are not written)."""
        if not isinstance(current, Mapping):
            return True
        mine = unstructure(self)
        return any(current.get(key) != value for key, value in mine.items() if key != "lastHeartbeat")


@attrs.frozen
class Connection:
    """What the ingester says about the cluster's agent (``clusterpulse_agent_connection``)."""

    connected: bool
    version: str = ""
    last_heartbeat: datetime | None = None


def agent_connection(ctx: ReconcileContext, cluster: str, now: datetime, silence_limit: float) -> Connection:
    """Ask the plugin that receives agents, if one is loaded; a silent agent counts as disconnected."""
    hook = ctx.runtime.plugins.hook("clusterpulse_agent_connection")  # None: no ingester
    if hook is None:
        return Connection(False)
    try:
        found = hook(cluster=cluster)
    except Exception as exc:
        ctx.log.warning("asking for the agent connection failed: %s", exc)
        return Connection(False)
    if found is None:
        return Connection(False)
    beat = getattr(found, "last_heartbeat", None)
    beat = beat if isinstance(beat, datetime) else None
    fresh = beat is None or (now - beat).total_seconds() <= silence_limit
    return Connection(fresh, str(getattr(found, "version", "") or ""), beat)


class TransportMismatchError(Exception):
    """``[plugins.cluster] ingester_tls_enabled`` says otherwise than the ingester's ``tls_enabled``."""


def ingester_transport(plugins: PluginHost, settings: ClusterSettings, strict: bool = True) -> IngesterTransport:
    """How agents reach the ingester: the ingester's own answer (``clusterpulse_ingester_transport``, the one
    source of truth); without the ingester plugin, ``ingester_tls_enabled`` (unset: TLS). With ``strict``,
    raises :class:`TransportMismatchError` when both are set and differ."""
    hook = plugins.hook("clusterpulse_ingester_transport")  # None: no ingester plugin loaded
    found: IngesterTransport | None = hook() if hook is not None else None
    if found is None:
        return IngesterTransport(settings.ingester_tls_enabled is not False)
    mine = settings.ingester_tls_enabled
    if strict and mine is not None and mine != found.tls_enabled:
        raise TransportMismatchError(
            f"plugins.cluster.ingester_tls_enabled = {str(settings.ingester_tls_enabled).lower()} disagrees with "
            f"plugins.ingester.tls_enabled = {str(found.tls_enabled).lower()}: the ingester's setting decides what "
            f"deployed agents get; remove plugins.cluster.ingester_tls_enabled (docs/configuration.md)"
        )
    return found


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def deployed_by_hub(agent_status: Any) -> bool:
    """Whether ``status.agent`` says the hub installed the agent (and so manages it)."""
    return isinstance(agent_status, Mapping) and agent_status.get("deployed") is True


def has_finalizer(obj: Mapping[str, Any]) -> bool:
    """Whether the hub's cleanup finalizer is on the object."""
    return FINALIZER in (_meta(obj).get("finalizers") or ())


class AgentDeployer:
    """The agent side of the cluster reconcile; keeps per-cluster memory between reconciles."""

    def __init__(
        self, settings: ClusterSettings, clock: Callable[[], datetime], version: Callable[[], str] = controller_version
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.version = version
        self._lock = threading.Lock()
        #: cluster -> wire form of the objects last applied successfully.
        self._applied: dict[str, list[dict[str, Any]]] = {}
        #: cluster -> clock time of its last sweep.
        self._swept: dict[str, datetime] = {}
        #: cluster -> what status.agent / the Redis status say.
        self._status: dict[str, AgentStatus] = {}
        #: cluster -> the client certificate its agent was given (mTLS).
        self._certificates: dict[str, AgentCertificate] = {}

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, ctx: ReconcileContext, obj: Mapping[str, Any], spec: ClusterConnectionSpec) -> str:
        """Deploy (push), remove (switched to pull) and sweep; raises :class:`AgentDeployError` on failure.

        Returns why the deployment waits (:class:`AgentDeferred`: the cluster is pulled meanwhile and the
        status says why), else ``""``.
        """
        meta = _meta(obj)
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        owner = Owner(namespace, name)
        raw_status = obj.get("status")
        current = raw_status.get("agent") if isinstance(raw_status, Mapping) else None
        if spec.is_push:
            self._add_finalizer(ctx, obj)
            connection = agent_connection(ctx, name, self.clock(), self._silence_limit())
            tag = image_tag(spec.collector_version, self.version())
            if connection.connected and not deployed_by_hub(current) and not self._applied_for(name):
                # An agent installed some other way is streaming: leave it alone. The hub takes
                # over only if it disconnects (as upstream does).
                self._set_status(
                    ctx, name, current, AgentStatus(False, connection.version, True, connection.last_heartbeat)
                )
                return ""
            try:
                credentials, client = self._client(ctx, name, namespace, spec)
                token = self._collector_token(ctx, obj, name, credentials.token)
                plan = self._plan(ctx, client, owner, spec, token, tag)
                self._deploy(ctx, client, plan, connection, spec, current)
            except AgentDeployError as exc:
                # A connected agent runs: the hub failing to reach the API server (a reason to use
                # push mode at all) must not turn a working cluster into an error.
                # The status keeps the version last deployed, so the change is tried again.
                was_deployed = connection.connected and deployed_by_hub(current)
                previous = str(current.get("version") or "") if isinstance(current, Mapping) else ""
                self._set_status(
                    ctx,
                    name,
                    current,
                    AgentStatus(was_deployed, previous, connection.connected, connection.last_heartbeat),
                )
                self._forget_applied(name)
                if connection.connected:
                    ctx.log.warning("the agent is connected, but checking its objects failed: %s", exc)
                    return ""
                if isinstance(exc, AgentDeferred):
                    ctx.log.info("%s", exc)
                    return str(exc)
                raise
            self._set_status(
                ctx, name, current, AgentStatus(True, tag, connection.connected, connection.last_heartbeat)
            )
            self._sweep(ctx, client, owner, spec)
            return ""
        if has_finalizer(obj):
            try:
                _, client = self._client(ctx, name, namespace, spec)
                leftovers, error = self.remove(client, owner, self._timeout(spec))
            except AgentDeployError as exc:
                leftovers, error = ["all"], str(exc)
            if leftovers:
                ctx.log.warning(
                    "switched to pull: removing the agent failed (%s), will retry; not removed: %s",
                    error,
                    ", ".join(leftovers),
                )
                return ""
            ctx.log.info("switched to pull: agent removed from the cluster")
            self._drop_finalizer(ctx, obj)
            self._forget_applied(name)
            self._set_status(ctx, name, current, None)
        return ""

    def after_pull(self, ctx: ReconcileContext, obj: Mapping[str, Any], spec: ClusterConnectionSpec) -> None:
        """A pull collection reached the cluster: sweep it for orphaned agent objects when due.

        Only after a success, so an unreachable cluster's breaker sees no extra calls.
        """
        meta = _meta(obj)
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        if spec.is_push or not self._sweep_due(name):
            return
        try:
            _, client = self._client(ctx, name, namespace, spec)
        except AgentDeployError:
            return
        self._sweep(ctx, client, Owner(namespace, name), spec)

    def redis_status(self, cluster: str) -> AgentStatus | None:
        """What ``cluster:<c>:status`` says about the agent (``None`` for a pull cluster)."""
        with self._lock:
            return self._status.get(cluster)

    def _deploy(
        self,
        ctx: ReconcileContext,
        client: KubeClient,
        plan: AgentPlan,
        connection: Connection,
        spec: ClusterConnectionSpec,
        current: Any,
    ) -> None:
        steps = plan.objects()
        wire_form = [to_wire(obj) for _, obj in steps]
        with self._lock:
            applied = self._applied.get(plan.cluster_name)
            if (
                connection.connected
                and applied is None
                and deployed_by_hub(current)
                and current.get("version") == plan.version
            ):
                # First look since a start, at a connected agent of the wanted version: trust the
                # status instead of reading the cluster; later changes of the plan are applied.
                self._applied[plan.cluster_name] = applied = wire_form
        if connection.connected and applied == wire_form:
            return
        applier = Applier(client, self._timeout(spec))
        for prefix, obj in steps:
            outcome = applier.ensure(prefix, obj)
            if outcome != UNCHANGED:
                ctx.log.info("agent: %s %s", prefix, outcome)
        with self._lock:
            self._applied[plan.cluster_name] = wire_form

    def _collector_token(self, ctx: ReconcileContext, obj: Mapping[str, Any], cluster: str, credentials: str) -> str:
        """The token the agent presents: minted by the hub for this cluster (its hub Secret created, or created
        again when deleted), or with ``collector_token_source = "credentials"`` the hub's own credential."""
        if self.settings.collector_token_source == collector_token.CREDENTIALS:
            return credentials
        try:
            return collector_token.ensure(
                ctx.hub,
                ctx.runtime.namespace,
                cluster,
                obj,
                timeout=float(self.settings.connect_timeout),
                cache=ctx.runtime.secrets,
            )
        except KubeApiError as exc:
            raise AgentDeployError(
                f"collector token: Secret {ctx.runtime.namespace}/{collector_token.secret_name(cluster)}: {exc}"
            ) from exc

    def _plan(
        self,
        ctx: ReconcileContext,
        client: KubeClient,
        owner: Owner,
        spec: ClusterConnectionSpec,
        token: str,
        tag: str,
    ) -> AgentPlan:
        settings = self.settings
        try:
            transport = ingester_transport(ctx.runtime.plugins, settings)
        except TransportMismatchError as exc:
            raise AgentDeployError(str(exc)) from exc
        ca: str | None = None
        if transport.tls_enabled and not settings.ingester_tls_use_system_ca:
            ca = self._ca_bundle(ctx)
        certificate: AgentCertificate | None = None
        if transport.tls_enabled and transport.client_certificates:
            certificate = self._client_certificate(ctx, client, owner.name, spec)
        read_types: set[tuple[str, str]] = set()
        hook = ctx.runtime.plugins.hook("clusterpulse_agent_read_types")  # None: no ingester
        for answer in hook() if hook is not None else ():
            read_types.update((str(group), str(resource)) for group, resource in answer or ())
        return AgentPlan(
            owner=owner,
            cluster_name=owner.name,
            ingester_address=spec.ingester_address,
            token=token,
            image=image_ref(settings.collector_image, tag),
            version=tag,
            command=tuple(settings.collector_command),
            operator_scan_interval=settings.operator_scan_interval,
            tls_enabled=transport.tls_enabled,
            tls_server_name=f"{settings.ingester_service_name}.{ctx.runtime.namespace}.svc",
            ca_bundle=ca,
            read_types=tuple(sorted(read_types)),
            client_certificate=certificate,
        )

    def _client_certificate(
        self, ctx: ReconcileContext, client: KubeClient, cluster: str, spec: ClusterConnectionSpec
    ) -> AgentCertificate:
        """The agent's client certificate: the one it has (remembered, else read from its cluster) while the
        ingester keeps it, else a new one the ingester issues (``clusterpulse_agent_certificate``)."""
        with self._lock:
            current = self._certificates.get(cluster)
        if current is None:
            current = self._read_client_certificate(client, spec)
        hook = ctx.runtime.plugins.hook("clusterpulse_agent_certificate")  # None: no ingester plugin
        try:
            issued: AgentCertificate | None = hook(cluster=cluster, current=current) if hook is not None else None
        except Exception as exc:
            raise AgentDeployError(f"client certificate: {type(exc).__name__}: {exc}") from exc
        if issued is None:
            raise AgentDeferred(
                "agent deployment deferred: the ingester requires client certificates, and none is issued here "
                "(the ingester does not run in this process, or serves your own certificate): give the agent "
                "your own (INGESTER_TLS_CLIENT_CERT, docs/push-mode.md#client-certificates)"
            )
        with self._lock:
            self._certificates[cluster] = issued
        return issued

    def _read_client_certificate(self, client: KubeClient, spec: ClusterConnectionSpec) -> AgentCertificate | None:
        path = f"/api/v1/namespaces/{AGENT_NAMESPACE}/secrets/{CLIENT_CERT_SECRET}"
        try:
            found = client.get(path, timeout=self._timeout(spec))
        except NotFoundError:
            return None
        except REMOTE_ERRORS as exc:
            raise AgentDeployError(f"client certificate: Secret {AGENT_NAMESPACE}/{CLIENT_CERT_SECRET}: {exc}") from exc
        data = decode_secret_data(found) if isinstance(found, dict) else {}
        if not data.get("tls.crt") or not data.get("tls.key"):
            return None
        return AgentCertificate(data["tls.crt"], data["tls.key"])

    def _ca_bundle(self, ctx: ReconcileContext) -> str:
        settings = self.settings
        namespace = settings.collector_ca_namespace or ctx.runtime.namespace
        where = f"{namespace}/{settings.collector_ca_configmap}"
        try:
            found = ctx.hub.get(
                f"/api/v1/namespaces/{namespace}/configmaps/{settings.collector_ca_configmap}",
                timeout=float(settings.connect_timeout),
            )
        except NotFoundError as exc:
            # The ingester publishes it when it starts (docs/push-mode.md#tls): until then only the agent waits.
            raise AgentDeferred(
                f"agent deployment deferred: the ingester CA ConfigMap {where} does not exist yet "
                f"(the ingester publishes it when it starts with TLS)"
            ) from exc
        except KubeApiError as exc:
            raise AgentDeployError(f"ingester CA: failed to get CA ConfigMap {where}: {exc}") from exc
        bundle = ((found or {}).get("data") or {}).get(settings.collector_ca_key)
        if not isinstance(bundle, str) or not bundle:
            key = settings.collector_ca_key
            raise AgentDeferred(f'agent deployment deferred: the ingester CA ConfigMap {where} has no key "{key}" yet')
        return bundle

    # ------------------------------------------------------------------ removal

    def remove(self, client: KubeClient, owner: Owner | None, timeout: float) -> tuple[list[str], str]:
        """Remove every agent object of ``owner``: ``(objects not removed, error)``, ``([], "")`` when done.

        Stops at the first failure (the cluster is probably unreachable) and reports that
        object and every one after it.
        """
        applier = Applier(client, timeout)
        for index, (otype, name, namespace) in enumerate(REMOVAL_ORDER):
            try:
                applier.remove(otype, name, namespace, owner)
            except REMOTE_ERRORS as exc:
                return [describe_ref(*entry) for entry in REMOVAL_ORDER[index:]], str(exc) or type(exc).__name__
        return [], ""

    def forget(self, ctx: ReconcileContext, ref: ObjectRef) -> float | None:
        """Deletion: remove the agent, then the finalizer; seconds until the next try while waiting."""
        try:
            obj = ctx.hub.get(ctx.kind.api_path(ref.namespace, ref.name), timeout=float(self.settings.connect_timeout))
        except NotFoundError:
            obj = None
        self._forget_applied(ref.name)
        with self._lock:
            self._swept.pop(ref.name, None)
            self._status.pop(ref.name, None)
        if not isinstance(obj, Mapping) or not has_finalizer(obj) or not _meta(obj).get("deletionTimestamp"):
            return None
        owner = Owner(ref.namespace, ref.name)
        error = ""
        leftovers = [describe_ref(*entry) for entry in REMOVAL_ORDER]
        try:
            spec = self._spec_of(obj)
            _, client = self._client(ctx, ref.name, ref.namespace, spec)
            leftovers, error = self.remove(client, owner, self._timeout(spec))
        except (AgentDeployError, ValueError) as exc:
            error = str(exc)
        if not leftovers:
            ctx.log.info("agent removed from the cluster; dropping the finalizer")
            self._drop_finalizer(ctx, obj)
            return None
        waited = self._deleting_for(obj)
        if waited < self.settings.agent_removal_timeout:
            ctx.log.warning(
                "removing the agent failed (%s); retrying, %.0f s left before giving up",
                error,
                self.settings.agent_removal_timeout - waited,
            )
            return min(REMOVAL_RETRY_SECONDS, max(self.settings.agent_removal_timeout - waited, 0.1))
        message = (
            f"gave up removing the collector agent after {waited:.0f} s ({error}); left on the "
            f"managed cluster: {', '.join(leftovers)}"
        )
        ctx.log.warning("%s", message)
        ctx.event("AgentLeftBehind", message, warning=True, uid=str(_meta(obj).get("uid") or ""))
        self._drop_finalizer(ctx, obj)
        return None

    def _deleting_for(self, obj: Mapping[str, Any]) -> float:
        try:
            since = parse_time(str(_meta(obj).get("deletionTimestamp")))
        except (TypeError, ValueError):
            return float("inf")
        return (self.clock() - since).total_seconds()

    @staticmethod
    def _spec_of(obj: Mapping[str, Any]) -> ClusterConnectionSpec:
        from clusterpulse_cluster.spec import InvalidSpecError, decode_spec

        try:
            return decode_spec(obj)
        except InvalidSpecError as exc:
            raise ValueError(str(exc)) from exc

    # ------------------------------------------------------------------ sweep

    def _sweep_due(self, cluster: str) -> bool:
        now = self.clock()
        with self._lock:
            last = self._swept.get(cluster)
            return last is None or (now - last).total_seconds() >= self.settings.agent_sweep_interval

    def _sweep(self, ctx: ReconcileContext, client: KubeClient, me: Owner, spec: ClusterConnectionSpec) -> None:
        """Remove agent objects on this cluster whose owning ClusterConnection is gone.

        Owners are read from every object but the token Secret (a reader need not read Secrets);
        an orphaned set is then removed as a whole, as a deletion would.
        """
        if not self._sweep_due(me.name):
            return
        applier = Applier(client, self._timeout(spec))
        owners: set[Owner] = set()
        try:
            for otype, name, namespace in REMOVAL_ORDER:
                if otype.kind != "Secret":
                    owner = owner_of(applier.get_at(otype, name, namespace))
                    if owner is not None and owner != me:
                        owners.add(owner)
        except REMOTE_ERRORS as exc:
            ctx.log.warning("agent sweep failed: %s", exc or type(exc).__name__)
            return
        with self._lock:
            self._swept[me.name] = self.clock()
        for owner in sorted(owners, key=str):
            if self._owner_exists(ctx, owner):
                continue
            leftovers, error = self.remove(client, owner, self._timeout(spec))
            if leftovers:
                ctx.log.warning(
                    "agent sweep: removing the objects of %s (gone) failed (%s): %s", owner, error, ", ".join(leftovers)
                )
            else:
                ctx.log.warning("agent sweep removed the agent objects of %s: that ClusterConnection is gone", owner)

    def _owner_exists(self, ctx: ReconcileContext, owner: Owner) -> bool:
        """Only a 404 from the hub counts as gone: when unsure (forbidden, timeout), keep the objects."""
        try:
            ctx.hub.get(ctx.kind.api_path(owner.namespace, owner.name), timeout=float(self.settings.connect_timeout))
        except NotFoundError:
            return False
        except KubeApiError as exc:
            ctx.log.info("agent sweep: cannot tell whether %s exists (%s); keeping its objects", owner, exc)
        return True

    # ------------------------------------------------------------------ helpers

    def _client(
        self, ctx: ReconcileContext, name: str, namespace: str, spec: ClusterConnectionSpec
    ) -> tuple[ClusterCredentials, KubeClient]:
        try:
            credentials = cluster_credentials(
                ctx.hub,
                api_url(spec.endpoint),
                spec.credentials_ref.namespace or namespace,
                spec.credentials_ref.name,
                ctx.runtime.secrets,
            )
            return credentials, ctx.runtime.pool.get(name, credentials)
        except CredentialsError as exc:
            raise AgentDeployError(f"agent: failed to get cluster client: {exc}") from exc
        except Exception as exc:
            raise AgentDeployError(f"agent: failed to get cluster client: {type(exc).__name__}: {exc}") from exc

    def _timeout(self, spec: ClusterConnectionSpec) -> float:
        return float(connect_timeout(self.settings.connect_timeout, spec.monitoring.timeout))

    def _silence_limit(self) -> float:
        return float(getattr(self.settings, "agent_silence_limit", 90.0))

    def _applied_for(self, cluster: str) -> bool:
        with self._lock:
            return cluster in self._applied

    def _forget_applied(self, cluster: str) -> None:
        with self._lock:
            self._applied.pop(cluster, None)
            self._certificates.pop(cluster, None)

    def _add_finalizer(self, ctx: ReconcileContext, obj: Mapping[str, Any]) -> None:
        if not has_finalizer(obj):
            self._set_finalizers(ctx, obj, [*list(_meta(obj).get("finalizers") or ()), FINALIZER])

    def _drop_finalizer(self, ctx: ReconcileContext, obj: Mapping[str, Any]) -> None:
        try:
            self._set_finalizers(ctx, obj, [f for f in _meta(obj).get("finalizers") or () if f != FINALIZER])
        except NotFoundError:
            pass

    def _set_finalizers(self, ctx: ReconcileContext, obj: Mapping[str, Any], finalizers: list[str]) -> None:
        # resourceVersion makes the patch fail (409, retried) if someone changed the list meanwhile.
        ctx.runtime.fence.check("finalizer patch")
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": _meta(obj).get("resourceVersion")}}
        ctx.hub.merge_patch(
            ctx.kind.api_path(ctx.ref.namespace, ctx.ref.name), patch, timeout=float(self.settings.connect_timeout)
        )

    def _set_status(self, ctx: ReconcileContext, cluster: str, current: Any, status: AgentStatus | None) -> None:
        with self._lock:
            if status is None:
                self._status.pop(cluster, None)
            else:
                self._status[cluster] = status
        if status is None:
            if current is not None:
                ctx.patch_status({"agent": None})
            return
        field = AgentStatusField(
            status.deployed,
            status.version,
            status.connected,
            format_time(status.last_heartbeat) if status.last_heartbeat else "",
        )
        if field.differs_from(current):
            ctx.patch_status({"agent": unstructure(field)})


__all__ = ["FINALIZER", "AgentDeployError", "AgentDeployer", "AgentStatusField", "covers", "has_finalizer"]
