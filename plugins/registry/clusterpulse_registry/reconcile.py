"""The RegistryConnection reconcile and deletion (docs/compatibility.md#registry-checks;
docs/compatibility.md#redis-keys)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from clusterpulse_model import RegistryMetricsRecord, RegistryStatusRecord
from clusterpulse_model.pieces import (
    EventPiece,
    RegistryDeletion,
    RegistryMetricsPiece,
    RegistrySpecPiece,
    RegistryStatusPiece,
)

from clusterpulse_core import serde
from clusterpulse_core.conditions import Condition, ready_condition
from clusterpulse_core.context import MAX_STATUS_MESSAGE, ReconcileContext, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, stored_refs
from clusterpulse_core.kube.credentials import PolicyError
from clusterpulse_core.logs import clip
from clusterpulse_core.pieces import Piece
from clusterpulse_core.store import StoreError
from clusterpulse_registry.clients import ClientCache, ClientSettings
from clusterpulse_registry.credentials import MissingCredentialsError, registry_credentials
from clusterpulse_registry.endpoint import normalise_endpoint
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_registry.policy import (
    UNHEALTHY,
    catalog_limit,
    check_timeout,
    classify_health,
    desired_status,
    health_message,
    phase_for,
    reconcile_interval,
    should_update_status,
)
from clusterpulse_registry.resource import (
    InvalidSpecError,
    RegistryConnectionSpec,
    parse_spec,
    parse_status,
    spec_record,
)
from clusterpulse_registry.result import HealthCheckResult
from clusterpulse_registry.settings import RegistrySettings
from clusterpulse_registry.status_patch import status_patch

EVENT_RECONCILED = "registry.reconciled"
EVENT_DELETED = "registry.deleted"


def client_key(ref: ObjectRef) -> str:
    """The client cache key of an object."""
    return f"{ref.namespace}/{ref.name}"


def state_pieces(
    name: str, spec: RegistryConnectionSpec, result: HealthCheckResult, now: datetime
) -> tuple[Piece, ...]:
    """Spec, status and response-time sample of one check, in the order they are written."""
    status = RegistryStatusRecord(
        available=result.available,
        response_time=result.response_time_ms,
        version=result.version,
        repository_count=result.repository_count,
        features=dict(result.features),
        repositories=result.repositories,
        last_check=now,
        error=result.error,
    )
    sample = RegistryMetricsRecord(
        timestamp=int(now.timestamp()), response_time=result.response_time_ms, available=result.available
    )
    return (
        RegistrySpecPiece(name, spec_record(spec)),
        RegistryStatusPiece(name, status),
        RegistryMetricsPiece(name, sample),
    )


def reconciled_event(
    name: str, spec: RegistryConnectionSpec, result: HealthCheckResult, health: str, now: datetime
) -> EventPiece:
    """The ``registry.reconciled`` event (docs/compatibility.md#redis-keys)."""
    data = {
        "health": health,
        "available": result.available,
        "response_time": result.response_time_ms,
        "display_name": spec.display_name,
        "type": spec.type,
    }
    return EventPiece(type=EVENT_RECONCILED, target=name, data=data, timestamp=now)


def _store(ctx: ReconcileContext, *pieces: Piece) -> str:
    """Store pieces; a storage failure is logged and returned, not raised (docs/compatibility.md#registry-checks)."""
    try:
        ctx.store(*pieces)
    except StoreError as exc:
        ctx.log.error("%s; the registry status on the hub is still updated", exc)
        return str(exc)
    return ""


def _ready(obj: Mapping[str, Any], status: Mapping[str, Any], health: str, message: str, now: datetime) -> Condition:
    """The ``Ready`` condition: True unless the registry is unhealthy."""
    generation = (obj.get("metadata") or {}).get("generation")
    previous = status.get("conditions")
    return ready_condition(
        health != UNHEALTHY,
        "ConnectionFailed" if health == UNHEALTHY else "Connected",
        message,
        generation if isinstance(generation, int) else 0,
        now,
        previous if isinstance(previous, list) else None,
    )


def _record_event(ctx: ReconcileContext, obj: Mapping[str, Any], before: str, after: str, message: str) -> None:
    """Connected / Recovered / ConnectionFailed on the RegistryConnection when its health changes."""
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    if after == UNHEALTHY:
        ctx.event("ConnectionFailed", message, warning=True, uid=uid)
    elif before == UNHEALTHY:
        ctx.event("Recovered", message, uid=uid)
    elif not before or before == "unknown":
        ctx.event("Connected", message, uid=uid)


class RegistryReconciler:
    """Reconciles RegistryConnections (the :class:`~clusterpulse_core.kinds.Reconciler` the kind declares):
    checks one registry per call; owns the registry clients."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.clients = ClientCache()
        self.settings = RegistrySettings()

    def check(self, spec: RegistryConnectionSpec, ctx: ReconcileContext) -> HealthCheckResult:
        """Run the (extended) health check with the Secret's credentials and the reused client.

        An endpoint outside ``endpoint_allow_list``, or a credentials Secret without the label
        ``require_secret_label`` asks for, is a failed check naming why (phase ``Error``): no
        request is sent. A credentials Secret that does not exist or lacks a key raises
        :class:`MissingCredentialsError` (nothing is sent either).
        """
        try:
            ctx.runtime.secrets.policy.check_endpoint(spec.endpoint)
            credentials = registry_credentials(ctx.hub, spec.credentials_ref, ctx.ref.namespace, ctx.runtime.secrets)
        except PolicyError as exc:
            return HealthCheckResult(error=str(exc))
        settings = ClientSettings(
            normalise_endpoint(spec.endpoint, spec.insecure),
            verify=not spec.skip_tls_verify,
            credentials=credentials,
            insecure=spec.insecure,
            realm_hosts=self.settings.realm_hosts(),
        )
        client, new = self.clients.client(client_key(ctx.ref), settings)
        if new and not settings.verify and settings.base_url.startswith("https://"):
            ctx.log.info("TLS certificate verification is disabled (spec.skipTLSVerify)")
        monitoring = spec.monitoring
        return client.extended_health_check(
            monitoring.check_catalog,
            catalog_limit(monitoring.max_catalog_entries),
            check_timeout(monitoring.timeout),
            ctx.log,
        )

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
        """Check the registry, store the outcome, patch the status if it changed, publish the event."""
        name = ctx.ref.name
        try:
            spec = parse_spec(obj)
        except InvalidSpecError as exc:
            return self._invalid(obj, ctx, str(exc))
        try:
            result = self.check(spec, ctx)
        except MissingCredentialsError as exc:
            # As an invalid spec: nothing sent, nothing stored; checked again every interval, so the
            # registry is healthy again at the first reconcile after the Secret appears.
            return self._invalid(obj, ctx, str(exc), reconcile_interval(spec.monitoring.interval))
        now = self.clock()
        health = classify_health(result.available, result.response_time_ms)
        message = health_message(health, result)
        store_error = _store(ctx, *state_pieces(name, spec, result, now))
        old = parse_status(obj)
        if should_update_status(old, result, health, message):
            new = desired_status(result, health, message, now)
            raw_status = obj.get("status") or {}
            patch = status_patch(raw_status, new, spec.monitoring.check_catalog)
            if patch:
                patch["conditions"] = [serde.unstructure(_ready(obj, raw_status, health, message, now))]
                ctx.patch_status(patch)
            if old.health != health:
                ctx.log.info("registry is %s: %s", health, message)
                _record_event(ctx, obj, old.health, health, message)
        store_error = _store(ctx, reconciled_event(name, spec, result, health, now)) or store_error
        interval = reconcile_interval(spec.monitoring.interval)
        return ReconcileResult(requeue_after=float(interval), error=message if health == UNHEALTHY else store_error)

    def _invalid(
        self, obj: Mapping[str, Any], ctx: ReconcileContext, error: str, interval: int | None = None
    ) -> ReconcileResult:
        """An invalid spec: status ``Error`` naming the field, no request sent, nothing stored (the
        last good check's data stays in Redis); retried at ``interval`` (the default interval), logged
        when it changes."""
        now = self.clock()
        result = HealthCheckResult(error=error)
        message = health_message(UNHEALTHY, result)
        old = parse_status(obj)
        repeated = old.phase == phase_for(result) and old.message == clip(message, MAX_STATUS_MESSAGE)
        (ctx.log.debug if repeated else ctx.log.warning)("%s", message)
        if not repeated:
            raw_status = obj.get("status") or {}
            patch = status_patch(raw_status, desired_status(result, UNHEALTHY, message, now), False)
            patch["conditions"] = [serde.unstructure(_ready(obj, raw_status, UNHEALTHY, message, now))]
            ctx.patch_status(patch)
            if old.health != UNHEALTHY:
                _record_event(ctx, obj, old.health, UNHEALTHY, message)
        return ReconcileResult(requeue_after=float(interval or reconcile_interval(0)), error=message)

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """The registries storage holds (``registries``), in the watch namespace."""
        return stored_refs(runtime, REGISTRY_CONNECTION.kind, "registries")

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        """Drop the client and remove the registry's stored state, then publish ``registry.deleted``."""
        self.clients.drop(client_key(ref))
        ctx.store(
            RegistryDeletion(ref.name),
            EventPiece(type=EVENT_DELETED, target=ref.name, data=None, timestamp=self.clock()),
        )
        ctx.log.info("registry state removed")
        return True

    def close(self) -> None:
        """Close every registry client."""
        self.clients.close()
