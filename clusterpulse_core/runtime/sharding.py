"""Sharding by Leases: replicas split the objects of sharded kinds between them.

With ``sharding = true`` every replica holds its own member Lease,
``clusterpulse-shard-<identity>``, renewed every ``retry_period`` like the leader Lease. The
holders of the Leases renewed within their duration are the live members; they form a
consistent-hash ring (:class:`HashRing`, ``TOKENS_PER_MEMBER`` virtual points per member), and
each object of a sharded kind belongs to the member that follows the hash of
``<kind>/<namespace>/<name>`` on the ring. A member joining or leaving moves only about
``1/members`` of the objects.

Handover never lets two replicas reconcile one object at once. Each member publishes on its
Lease (annotation :data:`VIEW_ANNOTATION`) the member list its ownership follows, and:

* when its view of the members changes, it stops taking the objects it no longer owns, waits
  until none of them is still being reconciled, and only then publishes the new view;
* it starts an object it did not hold before only once every live member has published the
  same view as its own (so that, under that one ring, nobody else owns it, and everybody has
  already let go of what they lost in it), and then only ``handover_delay`` (the reconcile
  interval) later, so the old and the new owner do not both reconcile it in one interval;
* a member whose last successful renewal started ``renew_deadline`` ago stops everything (the
  manager exits), before its Lease expires at ``lease_duration``: only then do the others count
  it gone and take its objects. Its writes are fenced by the same rule
  (:class:`~clusterpulse_core.runtime.lease.LeaseLock`, shared with the leader elector): a
  member paused past its Lease writes nothing once resumed, even before its round notices. A
  clean stop releases the Lease, so the others take over at once.

A kind that declares ``split_by`` (MetricSource, split by ClusterConnection) is reconciled on
every replica; each does the part of the work that belongs to the objects of the ``split_by``
kind it holds (:meth:`ShardMember.using`, which also holds their handover back until that part
has finished), and the one replica that holds the object itself (:meth:`ShardMember.admit`,
the same ring and handover rule) writes what belongs to the whole object.

A member Lease left behind by a member that died (not renewed for ``dead_after`` seconds,
default ten Lease durations) is deleted by a live member, guarded by its resourceVersion so a
member renewing it at that moment keeps it.

This is the shape of the kubernetes-controller-sharding project (member Leases, a consistent
hash ring with virtual nodes, "drain before reassign"), without its central sharder and object
labels: every member computes the same ring from the same Leases. Kinds that are not sharded
(and any work a plugin must do once) stay under the leader Lease.
"""

from __future__ import annotations

import bisect
import contextlib
import enum
import hashlib
import json
import logging
import re
import threading
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge

from clusterpulse_core import serde
from clusterpulse_core.clock import utcnow
from clusterpulse_core.fence import Fence
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.kube.client import ConflictError, KubeClient, NotFoundError
from clusterpulse_core.runtime.lease import (
    LEASE_KIND,
    DeleteOptions,
    LeaseLock,
    LeaseSpec,
    Preconditions,
    check_timings,
)

if TYPE_CHECKING:
    from clusterpulse_core.runtime.controller import Controller

log = logging.getLogger(__name__)

#: Member Leases are named this prefix plus the replica's identity (made a valid name).
SHARD_LEASE_PREFIX = "clusterpulse-shard-"
#: The annotation on a member Lease holding the member list (JSON) its ownership follows.
VIEW_ANNOTATION = "clusterpulse.io/shard-view"
#: Virtual points per member on the ring (evens out the shares).
TOKENS_PER_MEMBER = 100
#: A published view longer than this is ignored (hostile or broken annotation).
MAX_VIEW_BYTES = 64 * 1024
#: A member Lease not renewed for this many Lease durations is deleted (its member is dead).
DEAD_AFTER_DURATIONS = 10

View = tuple[str, ...]


class Admission(enum.Enum):
    """What the gate says about one object: reconcile it, try again shortly, or leave it."""

    RUN = "run"
    WAIT = "wait"
    DROP = "drop"


def _point(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class HashRing:
    """A consistent-hash ring of members, ``tokens`` points each."""

    def __init__(self, members: Iterable[str], tokens: int = TOKENS_PER_MEMBER) -> None:
        points = sorted((_point(f"{member}#{index}"), member) for member in set(members) for index in range(tokens))
        self._points = [point for point, _member in points]
        self._members = [member for _point_, member in points]

    def owner(self, key: str) -> str | None:
        """The member owning ``key`` (None on an empty ring)."""
        if not self._points:
            return None
        index = bisect.bisect(self._points, _point(key)) % len(self._points)
        return self._members[index]


def object_key(ref: ObjectRef) -> str:
    """The ring key of an object: ``<kind>/<namespace>/<name>``."""
    return f"{ref.kind}/{ref.namespace}/{ref.name}"


def lease_name(identity: str) -> str:
    """``clusterpulse-shard-<identity>`` as a valid object name (lower case, ``[a-z0-9.-]``, ≤ 253)."""
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", identity.lower()).strip("-.") or "member"
    name = SHARD_LEASE_PREFIX + cleaned
    if len(name) > 253:
        name = name[:236] + "-" + hashlib.sha1(identity.encode()).hexdigest()[:16]
    return name


def parse_view(text: Any) -> View | None:
    """A published member list, or None when the annotation is missing or not a list of names."""
    if not isinstance(text, str) or len(text) > MAX_VIEW_BYTES:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(sorted(set(value)))


class ShardMetrics:
    """``clusterpulse_shard_*``: members, objects this replica holds, handovers."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.members = Gauge(
            "clusterpulse_shard_members", "Live members of the shard ring this replica sees", registry=registry
        )
        self.owned = Gauge(
            "clusterpulse_shard_owned_objects",
            "Objects this replica reconciles, per kind",
            ["controller"],
            registry=registry,
        )
        self.handovers = Counter(
            "clusterpulse_shard_handovers_total",
            "Objects this replica took over or handed over",
            ["direction"],
            registry=registry,
        )
        self.dead_deleted = Counter(
            "clusterpulse_shard_dead_leases_deleted_total",
            "Member Leases of dead members this replica deleted",
            registry=registry,
        )


@attrs.frozen
class _Seen:
    """Another member's Lease as last observed, and when (on our clock) its record last changed."""

    spec: LeaseSpec
    view: View | None
    changed_at: float
    resource_version: str = ""


class ShardMember:
    """This replica's member Lease, its view of the ring, and the gate of its sharded controllers.

    ``controllers`` are the sharded kinds' controllers (keyed by kind); their queues receive
    the objects this member gains, and their in-flight items are waited for on a handover.
    ``on_lost`` runs once if the member Lease could not be renewed for ``renew_deadline``,
    after ``fence`` (the runtime's write fence) was closed. ``split`` are the controllers of the
    kinds that declare ``split_by``: they run everywhere, but their objects are held (by
    :meth:`admit`) by one member at a time, and a handover of one waits for its reconcile.
    ``dead_after`` (default ``DEAD_AFTER_DURATIONS`` Lease durations) is how long a member Lease
    stays unrenewed before it is deleted.
    """

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        identity: str,
        controllers: Mapping[str, Controller],
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        handover_delay: float = 30.0,
        metrics: ShardMetrics | None = None,
        on_lost: Callable[[], None] = lambda: None,
        fence: Fence | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = utcnow,
        split: Mapping[str, Controller] | None = None,
        dead_after: float | None = None,
    ) -> None:
        check_timings("sharding", lease_duration, renew_deadline, retry_period)
        self.client = client
        self.namespace = namespace
        self.identity = identity
        self.name = lease_name(identity)
        self.controllers = dict(controllers)
        self.split = dict(split or {})
        self.lease_duration = lease_duration
        self.dead_after = dead_after if dead_after is not None else DEAD_AFTER_DURATIONS * lease_duration
        if self.dead_after <= lease_duration:
            raise ValueError(
                f"sharding needs shard_dead_after > lease_duration, got {self.dead_after} / {lease_duration}"
            )
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.handover_delay = handover_delay
        self.metrics = metrics or ShardMetrics()
        self._on_lost = on_lost
        self.fence = fence
        self._clock = clock
        self._now = now
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}
        self._working: View = ()
        self._ring = HashRing(())
        self._published: View = ()
        self._others: dict[str, View | None] = {}
        self._held: dict[str, ObjectRef] = {}
        #: Held objects some split reconcile is working for right now (their handover waits).
        self._in_use: Tally[str] = Tally()
        self._started = False
        #: Alone since the start: nobody held anything before, so nothing waits for a handover.
        self._alone = True
        #: Objects this member gains from others (by a change of members), and when it may start them.
        self._handover: set[str] = set()
        self._not_before: dict[str, float] = {}
        self._lost = False
        #: This member's Lease; its lapse counts from now until the first renewal.
        self.lease = LeaseLock(
            client,
            namespace,
            self.name,
            identity,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            fence=fence,
            clock=clock,
            now=now,
        )
        self._renewed = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ state

    @property
    def path(self) -> str:
        """This member's Lease path."""
        return LEASE_KIND.api_path(self.namespace, self.name)

    @property
    def members(self) -> View:
        """The live members as this replica last saw them."""
        with self._lock:
            return self._working

    @property
    def published(self) -> View:
        """The member list this replica's ownership follows (as published on its Lease)."""
        with self._lock:
            return self._published

    def owns(self, ref: ObjectRef) -> bool:
        """Whether ``ref`` belongs to this replica on its current ring."""
        with self._lock:
            return self._ring.owner(object_key(ref)) == self.identity

    def holds(self, ref: ObjectRef) -> bool:
        """Whether this replica holds ``ref`` now: admitted, and not lost to a new ring yet."""
        with self._lock:
            return self._is_held(object_key(ref))

    @contextlib.contextmanager
    def using(self, refs: Iterable[ObjectRef]) -> Iterator[set[ObjectRef]]:
        """The refs among ``refs`` this replica holds, kept from being handed over until the block ends.

        A split kind's reconcile does its work for these objects only (MetricSource: collects
        only from the clusters whose ClusterConnection this replica holds); the new owner of one
        starts only after the block has ended here.
        """
        with self._lock:
            held = {ref for ref in refs if self._is_held(object_key(ref))}
            keys = [object_key(ref) for ref in held]
            self._in_use.update(keys)
        try:
            yield held
        finally:
            with self._lock:
                self._in_use.subtract(keys)
                for key in keys:
                    if self._in_use[key] <= 0:
                        del self._in_use[key]

    def admit(self, ref: ObjectRef) -> bool:
        """Whether this replica holds ``ref`` of a split kind, admitting it if it is its turn.

        The object-level part of a split kind's reconcile (MetricSource: the compiled definition,
        the status totals, the event) is done by the one replica for which this is True; it
        moves between replicas with the same handover rule as a sharded object.
        """
        return self.gate(ref)[0] is Admission.RUN

    def split_gate(self, ref: ObjectRef) -> tuple[Admission, float]:
        """The gate of a split kind: every replica reconciles it, once it has a ring (and not after losing it)."""
        with self._lock:
            if self._lost or self._stopping.is_set():
                return Admission.DROP, 0.0
            if not self._started:
                return Admission.WAIT, self.retry_period
        return Admission.RUN, 0.0

    def _is_held(self, key: str) -> bool:
        return key in self._held and not self._lost and self._ring.owner(key) == self.identity

    def gate(self, ref: ObjectRef) -> tuple[Admission, float]:
        """May this replica reconcile ``ref`` now, and if it must wait, for how long at most?

        Called by a sharded controller's worker before each reconcile. An object taken over
        from another member is first reconciled ``handover_delay`` seconds after everyone let
        go of it, so it is not reconciled twice (by the old and the new owner) in one interval.
        """
        key = object_key(ref)
        with self._lock:
            if self._lost or self._stopping.is_set():
                return Admission.DROP, 0.0
            if not self._started:
                return Admission.WAIT, self.retry_period
            mine = self._ring.owner(key) == self.identity
            if key in self._held:
                return (Admission.RUN if mine else Admission.DROP), 0.0
            if not mine:
                self._not_before.pop(key, None)
                self._handover.discard(key)
                return Admission.DROP, 0.0
            if self._published != self._working or any(view != self._working for view in self._others.values()):
                return Admission.WAIT, self.retry_period  # a handover is under way: start once all agree
            now = self._clock()
            if key in self._handover and self.handover_delay > 0:
                not_before = self._not_before.setdefault(key, now + self.handover_delay)
                if now < not_before:
                    return Admission.WAIT, not_before - now
            self._not_before.pop(key, None)
            self._handover.discard(key)
            self._held[key] = ref
            self.metrics.handovers.labels(direction="in").inc()
            self.metrics.owned.labels(controller=ref.kind.lower()).inc()
            return Admission.RUN, 0.0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Join: one round at once (creating the Lease), then a round every ``retry_period``."""
        if self._thread is not None:
            raise RuntimeError("shard member already started")
        self._thread = threading.Thread(target=self._run, name="shard-member", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True, timeout: float = 10.0) -> None:
        """Leave: stop the rounds and (``release``) give the Lease up so others take over at once.

        Call it after the sharded controllers have stopped reconciling.
        """
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if release and not self._lost:
            self._release()

    def _run(self) -> None:
        log.info("sharding: %s joins as lease %s/%s", self.identity, self.namespace, self.name)
        while not self._stopping.is_set():
            try:
                self.round()
            except Exception:
                log.exception("sharding: round failed")
            if self._lost:
                return
            self._stopping.wait(self.retry_period)

    # ------------------------------------------------------------------ one round

    def round(self) -> None:
        """Renew (publishing the current view), observe the members, move to a new view.

        The Lease is written before the others are listed: of two members joining at once,
        the second to list sees the first, so at most one of them can believe it is alone.
        """
        # Lapsed before renewing (paused, or the hub too slow): the others may already have taken
        # this member's objects, so a late renewal that happens to succeed must not count.
        if self._renewed and self.lease.lapsed():
            self._lose()
            return
        if self._renew():
            self._renewed = True
        elif self.lease.lapsed():
            self._lose()
            return
        others = self._observe()
        with self._lock:
            holding = self._renewed and not self.lease.lapsed()
            view = tuple(sorted({self.identity, *others} if holding else set(others)))
            self._others = {member: self._seen_view(member) for member in others}
            changed = view != self._working or not self._started
            if others:
                self._alone = False
            if changed:
                log.info("sharding: %s sees members %s", self.identity, ", ".join(view))
                self._working = view
                self._ring = HashRing(view)
                self.metrics.members.set(len(view))
            if self._release_lost():
                self._published = self._working  # written by the next renewal
            gained = self._gained() if changed else []
            if not self._alone:  # someone may have held them: a new object (an ADDED event) starts at once
                self._handover.update(object_key(ref) for _controller, ref in gained)
            self._started = True
        for controller, ref in gained:
            if controller.kind.kind in self.controllers:  # split kinds are reconciled everywhere anyway
                controller.queue.add(ref)
        self._delete_dead()

    def _release_lost(self) -> bool:
        """Let go of the held objects the current ring gives to others; True once none is in flight."""
        busy = False
        for key, ref in list(self._held.items()):
            controller = self.controllers.get(ref.kind) or self.split.get(ref.kind)
            if self._ring.owner(key) == self.identity:
                if controller is not None and self._deleted(controller, ref):
                    del self._held[key]  # deleted and forgotten: nothing left to hand over
                    self.metrics.owned.labels(controller=ref.kind.lower()).dec()
                continue
            if self._in_use[key] > 0 or (controller is not None and controller.queue.in_progress(ref)):
                busy = True
                continue
            del self._held[key]
            self.metrics.handovers.labels(direction="out").inc()
            self.metrics.owned.labels(controller=ref.kind.lower()).dec()
        return not busy

    @staticmethod
    def _deleted(controller: Controller, ref: ObjectRef) -> bool:
        """Gone from the cache and from the queue (its forget has run)."""
        return controller.informer.get(ref.namespace, ref.name) is None and not controller.queue.scheduled(ref)

    def _gained(self) -> list[tuple[Controller, ObjectRef]]:
        """Cached objects this member owns and does not hold yet (to queue)."""
        found = []
        for controller in (*self.controllers.values(), *self.split.values()):
            for obj in controller.informer.items():
                ref = controller.ref_of(obj)
                key = object_key(ref)
                if key not in self._held and self._ring.owner(key) == self.identity:
                    found.append((controller, ref))
        return found

    def _seen_view(self, member: str) -> View | None:
        for seen in self._seen.values():
            if seen.spec.holder_identity == member:
                return seen.view
        return None

    def _observe(self) -> list[str]:
        """List the member Leases; the identities of the other live members."""
        path = LEASE_KIND.api_path(self.namespace)
        now = self._clock()
        fresh: dict[str, _Seen] = {}
        for lease in self.client.list_items(path, timeout=self.lease.call_timeout):
            meta = lease.get("metadata") or {}
            name = str(meta.get("name") or "")
            if not name.startswith(SHARD_LEASE_PREFIX) or name == self.name:
                continue
            try:
                spec = serde.structure(lease.get("spec") or {}, LeaseSpec)
            except Exception as exc:
                log.warning("sharding: lease %s has an unreadable spec (ignored): %s", name, exc)
                continue
            annotations = meta.get("annotations")
            view = parse_view(annotations.get(VIEW_ANNOTATION) if isinstance(annotations, dict) else None)
            previous = self._seen.get(name)
            changed_at = previous.changed_at if previous is not None and previous.spec == spec else now
            fresh[name] = _Seen(spec, view, changed_at, str(meta.get("resourceVersion") or ""))
        with self._lock:
            self._seen = fresh
        live = []
        for seen in fresh.values():
            duration = seen.spec.lease_duration_seconds or self.lease_duration
            if seen.spec.holder_identity and now < seen.changed_at + duration:
                live.append(seen.spec.holder_identity)
        return live

    def _delete_dead(self) -> None:
        """Delete the member Leases nobody renewed for ``dead_after`` seconds (by our clock).

        The delete carries the resourceVersion we saw: if the member came back and renewed its
        Lease meanwhile, the API server refuses it (409) and the Lease stays.
        """
        now = self._clock()
        with self._lock:
            dead = [(name, seen) for name, seen in self._seen.items() if now - seen.changed_at >= self.dead_after]
        for name, seen in dead:
            try:
                self.client.request(
                    "DELETE",
                    LEASE_KIND.api_path(self.namespace, name),
                    body=serde.unstructure(DeleteOptions(Preconditions(seen.resource_version))),
                    timeout=self.lease.call_timeout,
                )
            except (ConflictError, NotFoundError):
                pass  # renewed again, or someone else deleted it first
            except Exception as exc:
                log.warning("sharding: deleting the dead member lease %s failed: %s", name, exc)
                continue
            else:
                self.metrics.dead_deleted.inc()
                log.info(
                    "sharding: deleted lease %s of member %s (not renewed for %.0f s)",
                    name,
                    seen.spec.holder_identity or "(released)",
                    now - seen.changed_at,
                )
            with self._lock:
                self._seen.pop(name, None)

    # ------------------------------------------------------------------ the member Lease

    def _renew(self) -> bool:
        """Create or renew this member's Lease with the published view; False on failure."""
        with self._lock:
            annotations = {VIEW_ANNOTATION: json.dumps(list(self._published))}
        try:
            return self.lease.try_acquire_or_renew(annotations)
        except Exception as exc:
            log.warning("sharding: renewing lease %s failed: %s", self.name, exc)
            return False

    def _release(self) -> None:
        try:
            if self.lease.release():
                log.info("sharding: %s left (released lease %s)", self.identity, self.name)
        except Exception as exc:
            log.warning("sharding: releasing lease %s failed: %s", self.name, exc)

    def _lose(self) -> None:
        if self.fence is not None:  # before anything else: no write may follow a lost member Lease
            self.fence.close(f"shard member Lease {self.name} lost")
        with self._lock:
            self._lost = True
            self._held.clear()
        log.error(
            "sharding: %s could not renew lease %s for %.1f s; stopping", self.identity, self.name, self.renew_deadline
        )
        self._on_lost()


def sharded_controllers(controllers: Mapping[str, Controller]) -> dict[str, Controller]:
    """The controllers of the kinds that declare themselves sharded."""
    return {name: c for name, c in controllers.items() if c.kind.sharded}


def split_controllers(controllers: Mapping[str, Controller]) -> dict[str, Controller]:
    """The controllers of the kinds split by a sharded kind (``split_by``), reconciled on every replica."""
    return {name: c for name, c in controllers.items() if c.kind.split_by and not c.kind.sharded}


def owned_counts(member: ShardMember, kinds: Sequence[str]) -> dict[str, int]:
    """How many of each kind's cached objects the member's current ring gives it (for tests and logs)."""
    counts = dict.fromkeys(kinds, 0)
    for name in kinds:
        controller = member.controllers.get(name)
        if controller is None:
            continue
        counts[name] = sum(1 for obj in controller.informer.items() if member.owns(controller.ref_of(obj)))
    return counts
