"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go ``leaderelection`` semantics).

A candidate tries to acquire the Lease every ``retry_period``; it may take it when nobody
holds it or when the holder's record has not changed for the lease duration (measured on the
candidate's own clock from when it last saw the record change, so clock skew between
replicas does not matter). The leader renews every ``retry_period``; if no renewal succeeded
for ``renew_deadline`` it has lost the lease and says so. Writes use the Lease's
resourceVersion, so two candidates racing for it cannot both win (the loser gets 409). On a
clean stop the leader releases the Lease so a successor takes over at once.

Fencing: with a :class:`~clusterpulse_core.fence.Fence`, each successful round extends the
replica's write permission to ``renew_deadline`` seconds after the round *started*; losing the
Lease closes the fence before anything else happens. Each call to the hub is bounded by
``renew_deadline / 2``, so a hung hub cannot hold a round past the deadline.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from clusterpulse_core import serde
from clusterpulse_core.fence import Fence
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.kube.client import ConflictError, KubeClient, NotFoundError
from clusterpulse_core.model.time import utcnow

log = logging.getLogger(__name__)

#: The leader election id of the Go controller (controllers.md §1.1).
LEASE_NAME = "cluster-controller.clusterpulse.io"
LEASE_KIND = ResourceKind(group="coordination.k8s.io", version="v1", kind="Lease", plural="leases", schema={})


def micro_time(value: datetime) -> str:
    """A Kubernetes ``MicroTime``: RFC 3339 in UTC with exactly six fraction digits."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """``<hostname>_<random>``, as controller-runtime names its candidates."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@serde.wire(case="camel", omit_empty=("holder_identity", "lease_duration_seconds", "acquire_time",
                                      "renew_time", "lease_transitions"))
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


class LeaderElector:
    """Campaigns for the Lease on a background thread and calls back when leadership changes.

    ``on_started_leading`` runs once this candidate holds the Lease; ``on_stopped_leading``
    runs if it later loses it (not on a clean :meth:`stop`). A candidate that lost the
    lease does not campaign again: the process is expected to stop (as controller-runtime's
    manager exits), so two replicas never run controllers at once.
    """

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        identity: str | None = None,
        *,
        name: str = LEASE_NAME,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = utcnow,
        fence: Fence | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError(
                f"leader election needs lease_duration > renew_deadline > retry_period > 0, got "
                f"{lease_duration} / {renew_deadline} / {retry_period}")
        self.client = client
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.name = name
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._now = now
        self.fence = fence
        self._call_timeout = min(client.timeout, renew_deadline / 2)
        self._observed: LeaseSpec | None = None
        self._observed_at = 0.0
        self._leader = threading.Event()
        self._lost = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        """The Lease's REST path."""
        return LEASE_KIND.api_path(self.namespace, self.name)

    @property
    def is_leader(self) -> bool:
        """Whether this candidate holds the Lease."""
        return self._leader.is_set()

    @property
    def lost(self) -> bool:
        """Whether this candidate held the Lease and lost it."""
        return self._lost.is_set()

    def wait_leader(self, timeout: float | None = None) -> bool:
        """Wait until this candidate leads; False on timeout."""
        return self._leader.wait(timeout)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start campaigning."""
        if self._thread is not None:
            raise RuntimeError("leader election already started")
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True, timeout: float = 10.0) -> None:
        """Stop campaigning or renewing; a leader releases the Lease when ``release``."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._leader.is_set():
            self._leader.clear()
            if release:
                self.release()

    def _run(self) -> None:
        log.info("leader election: %s campaigning for lease %s/%s", self.identity, self.namespace, self.name)
        while not self._stopping.is_set():
            started = self._clock()
            if self._attempt():
                self._renewed(started)
                break
            self._stopping.wait(self.retry_period)
        if self._stopping.is_set():
            return
        log.info("leader election: %s is the leader", self.identity)
        self._leader.set()
        self._on_started()
        last_renewal = self._clock()
        while not self._stopping.wait(self.retry_period):
            started = self._clock()
            if self._attempt():
                last_renewal = self._clock()
                self._renewed(started)
            elif self._clock() - last_renewal >= self.renew_deadline:
                break
        if self._stopping.is_set():
            return
        log.error("leader election: %s lost lease %s (no renewal for %.1f s)", self.identity, self.name,
                  self.renew_deadline)
        if self.fence is not None:
            self.fence.close(f"leader Lease {self.name} lost")
        self._leader.clear()
        self._lost.set()
        self._on_stopped()

    def _renewed(self, started: float) -> None:
        if self.fence is not None:
            # Based on when the round started: the hold cannot outlive what the other replicas see.
            self.fence.renewed(started + self.renew_deadline)

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except Exception as exc:
            log.warning("leader election: lease %s/%s: %s", self.namespace, self.name, exc)
            return False

    # ------------------------------------------------------------------ one round

    def try_acquire_or_renew(self) -> bool:
        """One attempt to take or renew the Lease; True when this candidate holds it afterwards."""
        now = micro_time(self._now())
        try:
            current = self.client.get(self.path, timeout=self._call_timeout)
        except NotFoundError:
            spec = held_by(None, self.identity, self._duration_seconds(), now)
            try:
                self.client.request("POST", LEASE_KIND.api_path(self.namespace),
                                    body=serde.unstructure(Lease(LeaseMeta(self.name, self.namespace), spec)),
                                    timeout=self._call_timeout)
            except ConflictError:
                return False
            self._observe(spec)
            return True
        spec = serde.structure(current.get("spec") or {}, LeaseSpec)
        self._observe(spec)
        ours = spec.holder_identity == self.identity
        if spec.holder_identity and not ours and not self._expired(spec):
            return False
        renewed = held_by(spec, self.identity, self._duration_seconds(), now)
        if not ours:
            log.info("leader election: %s takes lease %s over from %r", self.identity, self.name,
                     spec.holder_identity)
        return self._write(current, renewed)

    def release(self) -> bool:
        """Give the Lease up (holder cleared, 1 s duration) if this candidate still holds it."""
        try:
            current = self.client.get(self.path, timeout=self._call_timeout)
            spec = serde.structure(current.get("spec") or {}, LeaseSpec)
            if spec.holder_identity != self.identity:
                return False
            now = micro_time(self._now())
            if self._write(current, released(spec, now)):
                log.info("leader election: %s released lease %s", self.identity, self.name)
                return True
        except Exception as exc:
            log.warning("leader election: releasing lease %s failed: %s", self.name, exc)
        return False

    def _write(self, current: Mapping[str, Any], spec: LeaseSpec) -> bool:
        body = dict(current, spec=serde.unstructure(spec))
        try:
            self.client.request("PUT", self.path, body=body, timeout=self._call_timeout)
        except ConflictError:
            return False
        self._observe(spec)
        return True

    def _observe(self, spec: LeaseSpec) -> None:
        if spec != self._observed:
            self._observed = spec
            self._observed_at = self._clock()

    def _expired(self, spec: LeaseSpec) -> bool:
        duration = spec.lease_duration_seconds or self._duration_seconds()
        return self._clock() >= self._observed_at + duration

    def _duration_seconds(self) -> int:
        return duration_seconds(self.lease_duration)
