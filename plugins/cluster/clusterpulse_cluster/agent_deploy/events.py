"""Kubernetes Events on the hub about a ClusterConnection (``kubectl describe`` shows them)."""

from __future__ import annotations

from datetime import datetime

import attrs

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.serde import unstructure, wire

COMPONENT = "clusterpulse-controller"


@wire(case="camel")
@attrs.frozen
class EventMeta:
    """An Event's metadata: the server completes ``generateName``."""

    generate_name: str
    namespace: str


@wire(case="camel", omit_empty=("uid",))
@attrs.frozen
class InvolvedObject:
    """The object the Event is about."""

    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str = ""


@wire(case="camel")
@attrs.frozen
class EventSource:
    """Who reports."""

    component: str = COMPONENT


@wire(case="camel")
@attrs.frozen
class Event:
    """``v1`` Event."""

    metadata: EventMeta
    involved_object: InvolvedObject
    reason: str
    message: str
    first_timestamp: datetime
    last_timestamp: datetime
    type: str = "Warning"
    count: int = 1
    source: EventSource = attrs.field(factory=EventSource)
    api_version: str = "v1"
    kind: str = "Event"


def post_event(hub: KubeClient, involved: InvolvedObject, reason: str, message: str, now: datetime,
               kind: str = "Warning", timeout: float | None = None) -> None:
    """Create one Event in the involved object's namespace."""
    event = Event(EventMeta(f"{involved.name}.", involved.namespace), involved, reason, message[:1024], now, now,
                  type=kind)
    hub.request("POST", f"/api/v1/namespaces/{involved.namespace}/events", body=unstructure(event), timeout=timeout)
