"""The ClusterPulse contract's pieces of state, handed by the first-party reconciles to the store hook.

Each piece is a :class:`clusterpulse_core.pieces.Piece`: every enabled storage backend
receives it and ignores what it does not understand. Each names its target (cluster,
registry, MetricSource, alert, policy) and carries domain objects from
:mod:`clusterpulse_model`; how a backend lays them out is its own business (the Redis layout
is docs/compatibility.md#redis-keys). The generic record piece any kind can store is
:class:`clusterpulse_core.pieces.RecordPiece`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.clock import ZERO_TIME, utcnow
from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import wire
from clusterpulse_model import (
    AggregationResults,
    Alert,
    ClusterMetrics,
    ClusterOperatorInfo,
    ClusterSpecRecord,
    ClusterStatusRecord,
    CustomResourceCollection,
    NodeMetrics,
    OperatorInfo,
    RegistryMetricsRecord,
    RegistrySpecRecord,
    RegistryStatusRecord,
)
from clusterpulse_model.policy import CompiledPolicy, PolicyErrorRecord, PolicyStatusRecord


@attrs.frozen
class ClusterSpecPiece(Piece):
    """A ClusterConnection's spec as stored (before any remote call)."""

    cluster: str
    spec: ClusterSpecRecord


@attrs.frozen
class ClusterLabelsPiece(Piece):
    """A ClusterConnection's non-empty ``spec.labels``."""

    cluster: str
    labels: dict[str, str]


@attrs.frozen
class ClusterStatusPiece(Piece):
    """The outcome of a cluster reconcile or push batch."""

    cluster: str
    status: ClusterStatusRecord


@attrs.frozen
class ClusterInfoPiece(Piece):
    """Version, platform, console URL and (OpenShift) ClusterVersion facts, as a map."""

    cluster: str
    info: dict[str, Any]


@attrs.frozen
class ClusterMetricsPiece(Piece):
    """Cluster totals; backends also store ``metrics.namespace_list`` as the namespace list."""

    cluster: str
    metrics: ClusterMetrics


@attrs.frozen
class NamespacesPiece(Piece):
    """The cluster's namespace names, in API order."""

    cluster: str
    namespaces: tuple[str, ...]
    timestamp: datetime = attrs.field(factory=utcnow)


@attrs.frozen
class NodesPiece(Piece):
    """Every node of one collection (possibly none)."""

    cluster: str
    nodes: tuple[NodeMetrics, ...]


@attrs.frozen
class OperatorsPiece(Piece):
    """OLM operators found by an operator scan (only stored when non-empty)."""

    cluster: str
    operators: tuple[OperatorInfo, ...]


@attrs.frozen
class ClusterOperatorsPiece(Piece):
    """OpenShift ClusterOperators (only stored when non-empty)."""

    cluster: str
    cluster_operators: tuple[ClusterOperatorInfo, ...]


@attrs.frozen
class RegistrySpecPiece(Piece):
    """A RegistryConnection's spec as stored."""

    registry: str
    spec: RegistrySpecRecord


@attrs.frozen
class RegistryStatusPiece(Piece):
    """The result of one registry health check."""

    registry: str
    status: RegistryStatusRecord


@attrs.frozen
class RegistryMetricsPiece(Piece):
    """One registry response-time sample."""

    registry: str
    metrics: RegistryMetricsRecord


@attrs.frozen
class MetricSourcePiece(Piece):
    """A compiled MetricSource definition.

    ``compiled`` is the plugin's attrs object for the compiled form; backends serialise it
    with :func:`clusterpulse_core.serde.unstructure`. The other fields are what a backend
    needs for indexes without knowing the compiled type.
    """

    namespace: str
    name: str
    compiled: Any
    resource_type_name: str = ""
    kind: str = ""
    api_version: str = ""
    compiled_at: datetime = attrs.field(factory=utcnow)
    hash: str = ""

    @property
    def source_id(self) -> str:
        """``<namespace>/<name>``."""
        return f"{self.namespace}/{self.name}"


@attrs.frozen
class CustomResourcesPiece(Piece):
    """What one MetricSource collected from one cluster."""

    cluster: str
    collection: CustomResourceCollection


@attrs.frozen
class AggregationsPiece(Piece):
    """Aggregation results of one MetricSource over one cluster."""

    cluster: str
    results: AggregationResults


@attrs.frozen
class EventPiece(Piece):
    """A published event: cluster/registry events (``cluster-events``) or MetricSource events.

    ``target`` is the cluster or registry name, or the MetricSource id for
    ``channel == "metricsource-events"``; ``data`` is ``None`` for deletions.
    """

    type: str
    target: str
    data: dict[str, Any] | None = None
    channel: str = "cluster-events"
    timestamp: datetime = attrs.field(factory=utcnow)


@attrs.frozen
class ClusterDeletion(Piece):
    """A ClusterConnection is gone: remove its state."""

    cluster: str


@attrs.frozen
class RegistryDeletion(Piece):
    """A RegistryConnection is gone: remove its state."""

    registry: str


@attrs.frozen
class MetricSourceDeletion(Piece):
    """A MetricSource is gone: remove its definition, indexes and per-cluster data."""

    namespace: str
    name: str

    @property
    def source_id(self) -> str:
        """``<namespace>/<name>``."""
        return f"{self.namespace}/{self.name}"


@attrs.frozen
class MetricSourceClusterDeletion(Piece):
    """One MetricSource's data from one cluster is gone (collection, meta, aggregations)."""

    cluster: str
    source_id: str


@attrs.frozen
class MetricSourceOutcomePiece(Piece):
    """Which clusters one MetricSource run collected from, and why the others failed.

    Stored with the run's ``reconciled`` event; no upstream key holds it (backends that keep
    only the upstream layout ignore it), the alerts plugin turns ``failures`` into alerts.
    """

    source_id: str
    collected: tuple[str, ...] = ()
    failures: dict[str, str] = attrs.field(factory=dict)


# Alerts (docs/compatibility.md#r4). Kept apart from the generic record piece: ``alerts:<c>:<id>`` is
# an upstream-contract key that the ClusterPulse API reads.


@attrs.frozen
class AlertPiece(Piece):
    """An alert that is firing (newly or still): backends write or refresh it.

    ``cluster`` is the cluster (or registry) it belongs to; Redis writes hash
    ``alerts:<cluster>:<alert.id>`` with a ``CACHE_TTL`` expiry, so every evaluation that
    finds it still firing stores it again.
    """

    cluster: str
    alert: Alert


@attrs.frozen
class AlertResolution(Piece):
    """A firing alert resolved (or its rule went away): backends remove it."""

    cluster: str
    alert: Alert


# Resource collection (docs/compatibility.md#r3). Dormant upstream; here the cluster
# plugin's ``resources`` collector produces it (docs/compatibility.md#r3), and a backend stores it in
# exactly this shape.


@wire(omit_empty=("node", "labels"))
@attrs.frozen
class PodSummary:
    """One pod of a resource collection."""

    name: str
    namespace: str = ""
    status: str = ""
    node: str = ""
    labels: dict[str, str] = attrs.field(factory=dict)


@wire(omit_empty=("labels",))
@attrs.frozen
class DeploymentSummary:
    """One Deployment of a resource collection."""

    name: str
    namespace: str = ""
    replicas: int = 0
    ready: int = 0
    labels: dict[str, str] = attrs.field(factory=dict)


@wire(omit_empty=("cluster_ip", "labels"))
@attrs.frozen
class ServiceSummary:
    """One Service of a resource collection."""

    name: str
    namespace: str = ""
    type: str = ""
    cluster_ip: str = ""
    labels: dict[str, str] = attrs.field(factory=dict)


@wire(omit_empty=("labels",))
@attrs.frozen
class StatefulSetSummary:
    """One StatefulSet of a resource collection."""

    name: str
    namespace: str = ""
    replicas: int = 0
    ready: int = 0
    labels: dict[str, str] = attrs.field(factory=dict)


@wire(omit_empty=("labels",))
@attrs.frozen
class DaemonSetSummary:
    """One DaemonSet of a resource collection."""

    name: str
    namespace: str = ""
    desired: int = 0
    current: int = 0
    ready: int = 0
    labels: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class ResourceCollection:
    """Workload summaries collected from one cluster (``total_resources`` as the collector counted)."""

    timestamp: datetime = ZERO_TIME
    pods: tuple[PodSummary, ...] = ()
    deployments: tuple[DeploymentSummary, ...] = ()
    services: tuple[ServiceSummary, ...] = ()
    statefulsets: tuple[StatefulSetSummary, ...] = ()
    daemonsets: tuple[DaemonSetSummary, ...] = ()
    collection_time_ms: int = 0
    truncated: bool = False
    total_resources: int = 0


@attrs.frozen
class ResourceCollectionPiece(Piece):
    """Pods, Deployments, Services, StatefulSets and DaemonSets of one cluster (docs/compatibility.md#r3)."""

    cluster: str
    collection: ResourceCollection


# Access policies (MonitorAccessPolicy). The Redis layout of these pieces is the upstream
# ``policy:*`` contract (docs/policies.md); a backend that keeps no policies ignores them.


@attrs.frozen
class PolicyPiece(Piece):
    """A policy compiled: store ``data`` and its indexes, drop the indexes the previous version
    had and this one has not, record ``status``, invalidate the API caches of every subject of
    the old and new versions. Backends read the previous version themselves."""

    policy: CompiledPolicy
    status: PolicyStatusRecord


@attrs.frozen
class PolicyErrorPiece(Piece):
    """A policy failed to compile: record the error as its ``status``; its last good data stays."""

    namespace: str
    name: str
    status: PolicyErrorRecord


@attrs.frozen
class PolicyEventPiece(Piece):
    """A policy was ``compiled``, ``deleted`` or ``expired`` (published, not kept)."""

    action: str
    namespace: str
    name: str
    timestamp: datetime = attrs.field(factory=utcnow)


@attrs.frozen
class PolicyDeletion(Piece):
    """A policy is gone: remove its data, every index naming it and its subjects' cached decisions."""

    namespace: str
    name: str
    timestamp: datetime = attrs.field(factory=utcnow)


@attrs.frozen
class PolicyValidation(Piece):
    """The periodic validator: restate every stored policy at ``now`` (``expired`` events for the expired)."""

    now: datetime = attrs.field(factory=utcnow)


@attrs.frozen
class PolicyEvalCacheReset(Piece):
    """Start-up clean-up: drop every cached policy evaluation of the APIs."""
