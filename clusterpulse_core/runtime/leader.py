"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go ``leaderelection`` semantics).

A candidate tries to acquire the Lease every ``retry_period``; it may take it when nobody
holds it or when the holder's record has not changed for the lease duration. The leader renews
every ``retry_period``; once its last successful renewal started ``renew_deadline`` ago it has
lost the lease and says so. On a clean stop the leader releases the Lease so a successor takes
over at once. The Lease itself (bounded calls, optimistic writes, the write fence fed by each
renewal) is :class:`~clusterpulse_core.runtime.lease.LeaseLock`, shared with the shard member.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime

from clusterpulse_core.clock import utcnow
from clusterpulse_core.fence import Fence
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.lease import LeaseLock, check_timings

log = logging.getLogger(__name__)

#: The leader election id of the Go controller (docs/compatibility.md#manager).
LEASE_NAME = "cluster-controller.clusterpulse.io"


def default_identity() -> str:
    """``<hostname>_<random>``, as controller-runtime names its candidates."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


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
        check_timings("leader election", lease_duration, renew_deadline, retry_period)
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
        self.fence = fence
        self.lease = LeaseLock(
            client,
            namespace,
            name,
            self.identity,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            fence=fence,
            clock=clock,
            now=now,
        )
        self._leader = threading.Event()
        self._lost = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        """The Lease's REST path."""
        return self.lease.path

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
            if self._attempt():
                break
            self._stopping.wait(self.retry_period)
        if self._stopping.is_set():
            return
        log.info("leader election: %s is the leader", self.identity)
        self._leader.set()
        self._on_started()
        while not self._stopping.wait(self.retry_period):
            # Checked before renewing too: after a pause past the deadline, another replica may
            # already lead, so a late renewal that happens to succeed must not count.
            if self.lease.lapsed() or (not self._attempt() and self.lease.lapsed()):
                break
        if self._stopping.is_set():
            return
        log.error(
            "leader election: %s lost lease %s (no renewal for %.1f s)", self.identity, self.name, self.renew_deadline
        )
        if self.fence is not None:
            self.fence.close(f"leader Lease {self.name} lost")
        self._leader.clear()
        self._lost.set()
        self._on_stopped()

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except Exception as exc:
            log.warning("leader election: lease %s/%s: %s", self.namespace, self.name, exc)
            return False

    # ------------------------------------------------------------------ one round

    def try_acquire_or_renew(self) -> bool:
        """One attempt to take or renew the Lease; True when this candidate holds it afterwards."""
        holder = self.lease.holder()
        if self.lease.try_acquire_or_renew():
            if holder and holder != self.identity:
                log.info("leader election: %s took lease %s over from %r", self.identity, self.name, holder)
            return True
        return False

    def release(self) -> bool:
        """Give the Lease up (holder cleared, 1 s duration) if this candidate still holds it."""
        try:
            if self.lease.release():
                log.info("leader election: %s released lease %s", self.identity, self.name)
                return True
        except Exception as exc:
            log.warning("leader election: releasing lease %s failed: %s", self.name, exc)
        return False
