"""Node metrics from decoded Nodes and per-node pod tallies (docs/compatibility.md#cluster-collection)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache

import attrs
from clusterpulse_model import NodeCondition, NodeMetrics, NodeStatus, Taint, usage_percent

from clusterpulse_cluster.wire_types import NodeDoc, PodDoc
from clusterpulse_core import quantity
from clusterpulse_core.clock import ZERO_TIME

ROLE_PREFIX = "node-role.kubernetes.io/"
#: Pod phases counted per node; other or empty phases only count toward the total.
COUNTED_PHASES = ("Running", "Pending", "Failed", "Succeeded")
#: Phases whose containers' requests are summed.
REQUESTING_PHASES = frozenset({"Running", "Pending"})

# Quantity strings repeat across thousands of pods; parse each distinct string once.
parse_cpu = lru_cache(maxsize=4096)(quantity.parse_cpu)
parse_memory = lru_cache(maxsize=4096)(quantity.parse_memory)
pods_value = lru_cache(maxsize=1024)(quantity.pods_value)


@attrs.define
class PodTally:
    """What the pods bound to one node add up to."""

    running: int = 0
    pending: int = 0
    failed: int = 0
    succeeded: int = 0
    total: int = 0
    cpu_requested: float = 0.0
    memory_requested: int = 0

    def add(self, pod: PodDoc) -> None:
        """Count one pod; sum its regular containers' requests when Running or Pending."""
        phase = pod.status.phase
        self.total += 1
        if phase == "Running":
            self.running += 1
        elif phase == "Pending":
            self.pending += 1
        elif phase == "Failed":
            self.failed += 1
        elif phase == "Succeeded":
            self.succeeded += 1
        if phase not in REQUESTING_PHASES:
            return
        for container in pod.spec.containers or ():
            requests = container.resources.requests if container.resources is not None else None
            if requests is None:
                continue
            if requests.cpu:
                self.cpu_requested += parse_cpu(requests.cpu)
            if requests.memory:
                self.memory_requested += parse_memory(requests.memory)


#: The tally key of pods not bound to a node: counted in the cluster totals, on no node.
UNBOUND = ""
#: The tally key of pods bound to nodes that were not kept (a count bound): counted in the totals, on no node.
OTHER_NODES = "\x00other"


def tally_pods(pods: Iterable[PodDoc], tallies: dict[str, PodTally], nodes: frozenset[str] | None = None) -> None:
    """Add pods to the tally of the node each is bound to; unbound pods go to :data:`UNBOUND`.

    With ``nodes``, pods bound to a node not in it go to :data:`OTHER_NODES`.
    """
    for pod in pods:
        node = pod.spec.node_name
        if nodes is not None and node and node not in nodes:
            node = OTHER_NODES
        tally = tallies.get(node)
        if tally is None:
            tally = tallies[node] = PodTally()
        tally.add(pod)


def node_status(conditions: Iterable[tuple[str, str]], unschedulable: bool) -> str:
    """``Ready``/``NotReady`` from the last Ready condition, ``Unknown`` without one; cordoned wins."""
    status = NodeStatus.UNKNOWN.value
    for condition_type, condition_status in conditions:
        if condition_type == "Ready":
            status = NodeStatus.READY.value if condition_status == "True" else NodeStatus.NOT_READY.value
    if unschedulable:
        status = NodeStatus.SCHEDULING_DISABLED.value
    return status


def node_roles(labels: Mapping[str, str] | None) -> tuple[str, ...]:
    """The ``node-role.kubernetes.io/<role>`` label keys' roles, sorted (values ignored)."""
    return tuple(sorted(key[len(ROLE_PREFIX) :] for key in labels or () if key.startswith(ROLE_PREFIX)))


#: Default limit of one stored annotation value, bytes (UTF-8).
MAX_ANNOTATION_BYTES = 8192
TRUNCATED = "...[truncated]"


def bounded_annotations(annotations: Mapping[str, str] | None, limit: int) -> dict[str, str]:
    """The annotations with every value longer than ``limit`` bytes cut to it (and marked)."""
    out: dict[str, str] = {}
    for key, value in (annotations or {}).items():
        if len(value) > limit // 4 and len(encoded := value.encode()) > limit:
            value = encoded[:limit].decode(errors="ignore") + TRUNCATED
        out[key] = value
    return out


def node_metrics(
    node: NodeDoc, tally: PodTally | None, now: datetime, max_annotation_bytes: int = MAX_ANNOTATION_BYTES
) -> NodeMetrics:
    """Every NodeMetrics field of one node, with the requests of the pods bound to it.

    Annotation values longer than ``max_annotation_bytes`` are truncated: a cluster is not
    trusted to keep them small, and they are copied into every stored sample.
    """
    tally = tally or PodTally()
    meta, spec, status = node.metadata, node.spec, node.status
    conditions = status.conditions or []
    capacity = status.capacity or {}
    allocatable = status.allocatable or {}
    info = status.node_info
    addresses = {address.type: address.address for address in status.addresses or ()}
    cpu_allocatable = parse_cpu(allocatable.get("cpu", ""))
    memory_allocatable = parse_memory(allocatable.get("memory", ""))
    return NodeMetrics(
        name=meta.name,
        timestamp=now,
        status=node_status(((c.type, c.status) for c in conditions), spec.unschedulable),
        roles=node_roles(meta.labels),
        conditions=tuple(
            NodeCondition(c.type, c.status, c.reason, c.message, c.last_transition_time or ZERO_TIME)
            for c in conditions
        ),
        cpu_capacity=parse_cpu(capacity.get("cpu", "")),
        memory_capacity=parse_memory(capacity.get("memory", "")),
        storage_capacity=parse_memory(capacity.get("ephemeral-storage", "")),
        pods_capacity=pods_value(capacity.get("pods", "")),
        cpu_allocatable=cpu_allocatable,
        memory_allocatable=memory_allocatable,
        storage_allocatable=parse_memory(allocatable.get("ephemeral-storage", "")),
        pods_allocatable=pods_value(allocatable.get("pods", "")),
        cpu_requested=tally.cpu_requested,
        memory_requested=tally.memory_requested,
        cpu_usage_percent=usage_percent(tally.cpu_requested, cpu_allocatable),
        memory_usage_percent=usage_percent(tally.memory_requested, memory_allocatable),
        pods_running=tally.running,
        pods_pending=tally.pending,
        pods_failed=tally.failed,
        pods_succeeded=tally.succeeded,
        pods_total=tally.total,
        kernel_version=info.kernel_version if info else "",
        os_image=info.os_image if info else "",
        container_runtime=info.container_runtime_version if info else "",
        kubelet_version=info.kubelet_version if info else "",
        architecture=info.architecture if info else "",
        labels=dict(meta.labels or {}),
        annotations=bounded_annotations(meta.annotations, max_annotation_bytes),
        taints=tuple(Taint(t.key, t.value, t.effect) for t in spec.taints or ()),
        internal_ip=addresses.get("InternalIP", ""),
        external_ip=addresses.get("ExternalIP", ""),
        hostname=addresses.get("Hostname", ""),
        images_count=len(status.images or ()),
        volumes_attached=len(status.volumes_attached or ()),
        creation_timestamp=meta.creation_timestamp,
    )
