"""The one Lease primitive: a ``coordination.k8s.io/v1`` Lease this replica takes, renews and releases.

Both the leader elector (:mod:`clusterpulse_core.runtime.leader`) and the shard member
(:mod:`clusterpulse_core.runtime.sharding`) hold their Lease through :class:`LeaseLock`, so
both follow the same rules:

* **Bounded calls.** Every call to the hub is bounded by ``renew_deadline / 2`` (or the
  client's own timeout when shorter): a hung or slow hub cannot hold a renewal past the renew
  deadline, and the holder finds out it lapsed while the others still count it live.
* **Optimistic writes.** Renewals and releases are sent with the Lease's resourceVersion, so
  two writers racing for one Lease cannot both win (the loser gets 409 and reports failure).
* **The same fence.** Each successful renewal extends the replica's write permission
  (:class:`~clusterpulse_core.fence.Fence`) to ``renew_deadline`` seconds after the renewal
  *started* — before the earliest moment another replica may count the Lease expired (it
  measures ``lease_duration`` from when it saw the renewal, which is after it started). A
  replica paused past that (SIGSTOP, a long GC, a frozen VM) writes nothing once resumed.
* **Lapsed means lost.** :meth:`LeaseLock.lapsed` says whether the last successful renewal
  started ``renew_deadline`` or more ago; the holder then gives up (closes the fence, stops)
  rather than renewing again, since another replica may already have acted on the expiry.

Expiry of a Lease held by someone else is measured on this replica's own clock from when it
last saw the record change, so clock skew between replicas does not matter.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from clusterpulse_core import serde
from clusterpulse_core.clock import utcnow
from clusterpulse_core.fence import Fence
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.kube.client import ConflictError, KubeClient, NotFoundError

LEASE_KIND = ResourceKind(group="coordination.k8s.io", version="v1", kind="Lease", plural="leases", schema={})


def micro_time(value: datetime) -> str:
    """A Kubernetes ``MicroTime``: RFC 3339 in UTC with exactly six fraction digits."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@serde.wire(
    case="camel",
    omit_empty=("holder_identity", "lease_duration_seconds", "acquire_time", "renew_time", "lease_transitions"),
)
@attrs.frozen
class LeaseSpec:
    """``spec`` of a Lease (times are MicroTime strings, see :func:`micro_time`)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    lease_transitions: int = 0


def held_by(current: LeaseSpec | None, identity: str, duration_seconds: int, now: str) -> LeaseSpec:
    """The spec that makes ``identity`` the holder at ``now``: renewed when it already holds
    ``current``, taken over (one more transition) when someone else did, fresh when there is none."""
    if current is None:
        return LeaseSpec(identity, duration_seconds, now, now, 0)
    if current.holder_identity == identity:
        return attrs.evolve(current, lease_duration_seconds=duration_seconds, renew_time=now)
    return LeaseSpec(identity, duration_seconds, now, now, current.lease_transitions + 1)


def released(current: LeaseSpec, now: str) -> LeaseSpec:
    """The spec of a Lease given up: holder cleared and a 1 s duration, so others take it at once."""
    return LeaseSpec("", 1, now, now, current.lease_transitions)


def duration_seconds(lease_duration: float) -> int:
    """A Lease duration in the whole seconds the API stores (rounded up, at least 1)."""
    return max(1, math.ceil(lease_duration))


@attrs.frozen
class LeaseMeta:
    """The metadata a new Lease is created with."""

    name: str
    namespace: str


@serde.wire(case="camel")
@attrs.frozen
class Lease:
    """A whole Lease object, as created."""

    metadata: LeaseMeta
    spec: LeaseSpec
    api_version: str = LEASE_KIND.api_version
    kind: str = LEASE_KIND.kind


@serde.wire(case="camel")
@attrs.frozen
class Preconditions:
    """What must still hold for a delete to go ahead (meta/v1 Preconditions)."""

    resource_version: str


@serde.wire(case="camel")
@attrs.frozen
class DeleteOptions:
    """The body of a guarded delete: refused (409) if the object changed since it was read."""

    preconditions: Preconditions
    api_version: str = "v1"
    kind: str = "DeleteOptions"


def check_timings(what: str, lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """Raise ``ValueError`` unless ``lease_duration > renew_deadline > retry_period > 0``."""
    if not lease_duration > renew_deadline > retry_period > 0:
        raise ValueError(
            f"{what} needs lease_duration > renew_deadline > retry_period > 0, got "
            f"{lease_duration} / {renew_deadline} / {retry_period}"
        )


class LeaseLock:
    """One named Lease taken, renewed and released by ``identity`` (see the module docstring).

    ``annotations`` passed to :meth:`try_acquire_or_renew` are merged into the Lease's metadata
    (the shard member publishes its view of the ring that way). Transport errors propagate; a
    409 (someone else wrote the Lease first) is a failed attempt.
    """

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float,
        renew_deadline: float,
        fence: Fence | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.fence = fence
        self._clock = clock
        self._now = now
        #: The bound of every call to the hub for this Lease, seconds.
        self.call_timeout = min(client.timeout, renew_deadline / 2)
        self._lock = threading.Lock()
        self._observed: LeaseSpec | None = None
        self._observed_at = 0.0
        self._created_at = clock()
        self._renewed_at: float | None = None

    @property
    def path(self) -> str:
        """The Lease's REST path."""
        return LEASE_KIND.api_path(self.namespace, self.name)

    @property
    def renewed_at(self) -> float | None:
        """When (this clock) the last successful acquire or renewal started; None before the first."""
        with self._lock:
            return self._renewed_at

    def lapsed(self) -> bool:
        """Whether ``renew_deadline`` passed since the last successful renewal started.

        Before the first success it counts from when this lock was made (a holder that never got
        its Lease written within the renew deadline gives up too).
        """
        with self._lock:
            since = self._renewed_at if self._renewed_at is not None else self._created_at
        return self._clock() - since >= self.renew_deadline

    def try_acquire_or_renew(self, annotations: Mapping[str, str] | None = None) -> bool:
        """One attempt to create, take over (when expired) or renew the Lease; True when held afterwards."""
        started = self._clock()
        now = micro_time(self._now())
        try:
            current = self.client.get(self.path, timeout=self.call_timeout)
        except NotFoundError:
            spec = held_by(None, self.identity, self._duration_seconds(), now)
            body = serde.unstructure(Lease(LeaseMeta(self.name, self.namespace), spec))
            if annotations:
                body["metadata"]["annotations"] = dict(annotations)
            try:
                self.client.request("POST", LEASE_KIND.api_path(self.namespace), body=body, timeout=self.call_timeout)
            except ConflictError:
                return False
            self._observe(spec)
            self._renewed(started)
            return True
        spec = serde.structure(current.get("spec") or {}, LeaseSpec)
        self._observe(spec)
        if spec.holder_identity and spec.holder_identity != self.identity and not self._expired(spec):
            return False
        if not self._write(current, held_by(spec, self.identity, self._duration_seconds(), now), annotations):
            return False
        self._renewed(started)
        return True

    def holder(self) -> str:
        """The holder this replica last saw (``""``: none, or not read yet)."""
        with self._lock:
            return self._observed.holder_identity if self._observed is not None else ""

    def release(self) -> bool:
        """Give the Lease up (holder cleared, 1 s duration) if ``identity`` still holds it."""
        current = self.client.get(self.path, timeout=self.call_timeout)
        spec = serde.structure(current.get("spec") or {}, LeaseSpec)
        if spec.holder_identity != self.identity:
            return False
        return self._write(current, released(spec, micro_time(self._now())))

    def _write(self, current: Mapping[str, Any], spec: LeaseSpec, annotations: Mapping[str, str] | None = None) -> bool:
        body = dict(current, spec=serde.unstructure(spec))
        if annotations:
            meta = dict(current.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            body["metadata"] = meta
        try:
            self.client.request("PUT", self.path, body=body, timeout=self.call_timeout)
        except ConflictError:
            return False
        self._observe(spec)
        return True

    def _renewed(self, started: float) -> None:
        with self._lock:
            self._renewed_at = started
        if self.fence is not None:
            # From when the round started: the hold cannot outlive what the other replicas see.
            self.fence.renewed(started + self.renew_deadline)

    def _observe(self, spec: LeaseSpec) -> None:
        with self._lock:
            if spec != self._observed:
                self._observed = spec
                self._observed_at = self._clock()

    def _expired(self, spec: LeaseSpec) -> bool:
        duration = spec.lease_duration_seconds or self._duration_seconds()
        with self._lock:
            observed_at = self._observed_at
        return self._clock() >= observed_at + duration

    def _duration_seconds(self) -> int:
        return duration_seconds(self.lease_duration)
