"""Kubernetes Events on the hub objects (``kubectl describe`` shows them), kopf's convention.

A reconciler records an Event when its object changes state (Connected, ConnectionFailed,
CircuitOpen, Recovered, CompileError). The recorder rate-limits: the same reason for the same
object is recorded at most once per ``min_interval`` seconds, so a cluster failing every
30 s does not flood the hub. Events are written like any other write: not when the write
fence is closed, and a failure to record one is logged, never raised.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

import attrs

from clusterpulse_core import serde
from clusterpulse_core.clock import utcnow
from clusterpulse_core.fence import Fence, FencedError
from clusterpulse_core.kinds import ObjectRef, ResourceKind
from clusterpulse_core.kube.client import KubeClient

log = logging.getLogger(__name__)

COMPONENT = "clusterpulse"
NORMAL = "Normal"
WARNING = "Warning"
#: Event messages are cut to this many characters (the API server limit is 1 KiB).
MAX_MESSAGE = 1000


@serde.wire(case="camel")
@attrs.frozen
class EventMeta:
    """``metadata`` of a new Event: a generated name in the object's namespace."""

    generate_name: str
    namespace: str


@serde.wire(case="camel", omit_empty=("uid", "namespace"))
@attrs.frozen
class InvolvedObject:
    """The object the Event is about."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""


@attrs.frozen
class EventSource:
    """Who reported the Event."""

    component: str = COMPONENT


@serde.wire(case="camel")
@attrs.frozen
class Event:
    """A ``v1/Event`` as created."""

    metadata: EventMeta
    involved_object: InvolvedObject
    reason: str
    message: str
    type: str
    first_timestamp: datetime
    last_timestamp: datetime
    reporting_component: str = COMPONENT
    reporting_instance: str = ""
    count: int = 1
    source: EventSource = EventSource()
    api_version: str = "v1"
    kind: str = "Event"


class EventRecorder:
    """Records Events through ``hub``, rate-limited per (object, reason)."""

    def __init__(
        self, hub: KubeClient, fence: Fence, min_interval: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.hub = hub
        self.fence = fence
        self.min_interval = min_interval
        #: ``reportingInstance`` (the manager sets its identity).
        self.instance = ""
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[ObjectRef, str], float] = {}
        self.suppressed = 0

    def record(
        self, kind: ResourceKind, ref: ObjectRef, reason: str, message: str, *, warning: bool = False, uid: str = ""
    ) -> bool:
        """Record one Event unless the same one was recorded recently; True when written."""
        key = (ref, reason)
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.min_interval:
                self.suppressed += 1
                return False
            self._last[key] = now
            if len(self._last) > 10_000:
                self._last.pop(next(iter(self._last)))
        stamp = utcnow()
        namespace = ref.namespace or "default"
        event = Event(
            metadata=EventMeta(f"{ref.name}.", namespace),
            involved_object=InvolvedObject(kind.api_version, kind.kind, ref.name, ref.namespace, uid),
            reason=reason,
            message=message[:MAX_MESSAGE],
            type=WARNING if warning else NORMAL,
            first_timestamp=stamp,
            last_timestamp=stamp,
            reporting_instance=self.instance,
        )
        try:
            self.fence.check("event")
            self.hub.request("POST", f"/api/v1/namespaces/{namespace}/events", body=serde.unstructure(event))
        except FencedError:
            return False
        except Exception as exc:
            # Not counted against the rate limit: the next occurrence (the next reconcile, which
            # still sees the old state on the hub) records it again.
            with self._lock:
                if self._last.get(key) == now:
                    del self._last[key]
            log.warning("[%s] recording event %s failed (recorded at its next occurrence): %s", ref, reason, exc)
            return False
        return True
