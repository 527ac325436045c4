"""The ClusterConnection status subresource: what a reconcile writes, and only when it changed (C10)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
from clusterpulse_model import Health, HealthVerdict

from clusterpulse_core.conditions import Condition, condition, ready_condition
from clusterpulse_core.kube.credentials import TransportWarning
from clusterpulse_core.limits import INVALID_NAME, Skipped, describe
from clusterpulse_core.serde import format_time, unstructure, wire

PHASE_CONNECTED = "Connected"
PHASE_ERROR = "Error"
REACHABLE = "Cluster is reachable"
#: Condition present (``True``) while the credentials Secret opts out of verified TLS (docs/security.md).
INSECURE_TRANSPORT = "InsecureTransport"
#: Condition present (``True``) while a count bound or a name check left items out (docs/faults.md#count-bounds).
TRUNCATED = "Truncated"


@wire(case="camel", omit_empty=("last_sync_time", "nodes", "namespaces", "conditions"))
@attrs.frozen
class ConnectionStatus:
    """The status fields a pull reconcile owns (docs/compatibility.md#crds); ``collectorStatus`` is left alone."""

    phase: str
    health: str
    message: str
    last_sync_time: datetime | None = None
    nodes: int | None = None
    namespaces: int | None = None
    conditions: tuple[Condition, ...] = ()

    def differs_from(self, current: Mapping[str, Any]) -> bool:
        """Whether writing this status would change anything but ``lastSyncTime``."""
        mine = self.patch()
        return any(current.get(key) != value for key, value in mine.items() if key != "lastSyncTime")

    def patch(self) -> dict[str, Any]:
        """The merge-patch body of ``status``."""
        return {key: value for key, value in unstructure(self).items() if value is not None}


def connected(
    now: datetime,
    nodes: int,
    namespaces: int,
    generation: int = 0,
    previous: Mapping[str, Any] | None = None,
    note: str = "",
    verdict: HealthVerdict | None = None,
    insecure: TransportWarning | None = None,
    skipped: Sequence[Skipped] = (),
) -> ConnectionStatus:
    """Status after a successful pull collection, with ``Ready=True`` (``note``: why a push cluster was pulled).

    ``health`` and ``message`` are the cluster's health ``verdict`` (docs/readers.md#r7-health);
    the ``Ready`` condition says the cluster was reached. ``insecure`` (what weakens the transport,
    docs/security.md) adds the ``InsecureTransport`` warning condition, ``skipped`` (what the
    collection left out) the ``Truncated`` condition.
    """

    def noted(text: str) -> str:
        return f"{text} ({note})" if note else text

    verdict = verdict or HealthVerdict(Health.HEALTHY.value, REACHABLE)
    ready = ready_condition(True, PHASE_CONNECTED, noted(REACHABLE), generation, now, _conditions(previous))
    return ConnectionStatus(
        PHASE_CONNECTED,
        verdict.health,
        noted(verdict.message),
        now,
        nodes,
        namespaces,
        (
            ready,
            *insecure_conditions(insecure, generation, now, previous),
            *truncated_conditions(skipped, generation, now, previous),
        ),
    )


def truncated_conditions(
    skipped: Sequence[Skipped], generation: int, now: datetime, previous: Mapping[str, Any] | None
) -> tuple[Condition, ...]:
    """The ``Truncated=True`` condition saying what was left out and why, else none.

    Its reason is ``CountLimit`` when a count bound cut a list, else ``InvalidNames``.
    """
    message = describe(skipped)
    if not message:
        return ()
    reason = "InvalidNames" if all(item.reason == INVALID_NAME for item in skipped) else "CountLimit"
    return (condition(TRUNCATED, True, reason, message, generation, now, _conditions(previous)),)


def truncation_announced(current: Mapping[str, Any]) -> str:
    """The message of the ``Truncated`` condition the status holds now (``""``: none)."""
    for found in _conditions(current):
        if found.get("type") == TRUNCATED and found.get("status") == "True":
            return str(found.get("message") or "")
    return ""


def failed(
    message: str,
    now: datetime | None = None,
    generation: int = 0,
    previous: Mapping[str, Any] | None = None,
    reason: str = "ConnectionFailed",
    insecure: TransportWarning | None = None,
) -> ConnectionStatus:
    """Status after a failed reconcile (docs/compatibility.md#c1), with ``Ready=False`` when ``now`` is given."""
    conditions = (
        ()
        if now is None
        else (
            ready_condition(False, reason, message, generation, now, _conditions(previous)),
            *insecure_conditions(insecure, generation, now, previous),
        )
    )
    return ConnectionStatus(PHASE_ERROR, Health.UNHEALTHY.value, message, conditions=conditions)


def insecure_conditions(
    insecure: TransportWarning | None, generation: int, now: datetime, previous: Mapping[str, Any] | None
) -> tuple[Condition, ...]:
    """The ``InsecureTransport=True`` condition when the transport is weakened, else none."""
    if insecure is None:
        return ()
    return (
        condition(INSECURE_TRANSPORT, True, insecure.reason, insecure.message, generation, now, _conditions(previous)),
    )


def insecure_announced(current: Mapping[str, Any]) -> str:
    """The message of the ``InsecureTransport`` condition the status holds now (``""``: none)."""
    for found in _conditions(current):
        if found.get("type") == INSECURE_TRANSPORT and found.get("status") == "True":
            return str(found.get("message") or "")
    return ""


def _conditions(status: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    found = (status or {}).get("conditions")
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


PUSH_ACTIVE = "Collector push active"


def push_active(
    version: str,
    last_heartbeat: datetime,
    now: datetime,
    generation: int = 0,
    previous: Mapping[str, Any] | None = None,
    health: str = Health.HEALTHY.value,
    insecure: TransportWarning | None = None,
) -> dict[str, Any]:
    """Status patch of a push-mode cluster whose agent is connected and heard from
    (docs/compatibility.md#cluster-reconcile).

    ``health`` is the verdict of the agent's latest stored batch (its reason is in Redis).
    """
    beat = format_time(last_heartbeat)
    message = f"{PUSH_ACTIVE} (agent {version or 'unknown'}, last heartbeat {beat})"
    ready = ready_condition(True, PHASE_CONNECTED, PUSH_ACTIVE, generation, now, _conditions(previous))
    conditions = (ready, *insecure_conditions(insecure, generation, now, previous))
    patch = ConnectionStatus(PHASE_CONNECTED, health, message, conditions=conditions).patch()
    patch["collectorStatus"] = {"connected": True, "version": version, "lastHeartbeat": beat}
    return patch


def push_fallback_reason(version: str, last_heartbeat: datetime | None) -> str:
    """Why a push-mode cluster is being pulled (docs/compatibility.md#c3), for the status message."""
    if last_heartbeat is None:
        return "push agent not connected: collecting by pull"
    return f"push agent {version or 'unknown'} silent since {format_time(last_heartbeat)}: collecting by pull"


def collector_disconnected(current: Mapping[str, Any]) -> dict[str, Any] | None:
    """``collectorStatus`` marking the agent disconnected (keeping version and heartbeat), or None if it is."""
    previous = current.get("collectorStatus")
    previous = previous if isinstance(previous, Mapping) else {}
    if previous and previous.get("connected") is False:
        return None
    out: dict[str, Any] = {"connected": False}
    for key in ("version", "lastHeartbeat"):
        if previous.get(key):
            out[key] = previous[key]
    return out
