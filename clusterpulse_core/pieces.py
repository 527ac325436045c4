"""The pieces of state a reconcile hands to the store hook.

Every enabled storage backend receives every piece (fan-out). A backend handles the pieces
it understands and ignores the others, so a new piece type never breaks an old backend.
Each piece names its target (cluster, registry or MetricSource) and carries domain objects
from :mod:`clusterpulse_core.model`; how a backend lays them out is its own business
(the Redis layout is docs/compatibility.md#redis-keys).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.model import (
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
from clusterpulse_core.model.policy import CompiledPolicy, PolicyErrorRecord, PolicyStatusRecord
from clusterpulse_core.model.time import ZERO_TIME, utcnow
from clusterpulse_core.serde import wire


@attrs.frozen
class Piece:
    """Base class of everything passed to the store hook."""


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


# Generic records: how a plugin stores state of a kind the core has never heard of.

#: Kinds whose lower-case name is a key prefix or metric family of the upstream contract.
RESERVED_RECORD_KINDS = frozenset({
    "cluster", "clusters", "registry", "registries", "metricsource", "metricsources", "events",
    "event", "alerts", "node", "operator", "custom", "vm", "store",
})
_RECORD_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_RECORD_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_RECORD_INDEX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.=-]{0,127}")
_RECORD_NUMBER = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,127}")


def _check(pattern: re.Pattern[str], what: str) -> Any:
    def validate(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise ValueError(f"{attribute.name}: {value!r} is not a valid {what}")

    return validate


def _check_kind(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _check(_RECORD_KIND, "kind (letters and digits, starting with a letter)")(instance, attribute, value)
    if value.lower() in RESERVED_RECORD_KINDS:
        raise ValueError(f"{attribute.name}: {value!r} is reserved by the upstream key layout; "
                         "choose another kind name")


def _check_indexes(_instance: Any, attribute: attrs.Attribute[Any], value: tuple[str, ...]) -> None:
    for index in value:
        if not isinstance(index, str) or not _RECORD_INDEX.fullmatch(index):
            raise ValueError(f"{attribute.name}: {index!r} is not a valid index name "
                             "(letters, digits, '_', '.', '=', '-'; no ':' or '/')")


def _check_numbers(_instance: Any, attribute: attrs.Attribute[Any], value: Mapping[str, float]) -> None:
    for name, number in value.items():
        if not isinstance(name, str) or not _RECORD_NUMBER.fullmatch(name):
            raise ValueError(f"{attribute.name}: {name!r} is not a valid number name (a metric name part: "
                             "letters, digits and '_')")
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise ValueError(f"{attribute.name}.{name}: expected a number, got {number!r}")


def _check_ttl(_instance: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{attribute.name}: expected a whole number of seconds >= 1 or None, got {value!r}")


class _RecordIdentity:
    """What a record piece and its deletion share: the namespace check, the id and the key prefix."""

    __slots__ = ()
    kind: str
    namespace: str
    name: str

    def __attrs_post_init__(self) -> None:
        if self.namespace and not _RECORD_NAME.fullmatch(self.namespace):
            raise ValueError(f"namespace: {self.namespace!r} is not a valid Kubernetes namespace name")

    @property
    def record_id(self) -> str:
        """``<namespace>/<name>``: the member of the index sets."""
        return f"{self.namespace}/{self.name}"

    @property
    def key_prefix(self) -> str:
        """The lower-case kind that prefixes every key of the kind."""
        return self.kind.lower()


@attrs.frozen
class RecordPiece(_RecordIdentity, Piece):
    """One record of a plugin's own kind: a JSON document plus optional numbers and index names.

    The generic way to store state the core has no piece for. Every name is validated when
    the piece is built (a bad one raises ``ValueError`` naming the field), so nothing a
    cluster or a user sent can shape a storage key. Storing the same (kind, namespace, name)
    again replaces the record.

    * ``kind``: the owning kind (``ConfigAudit``); its lower-case form prefixes the keys.
    * ``namespace`` / ``name``: Kubernetes names (``namespace`` may be empty for
      cluster-scoped kinds).
    * ``document``: any JSON-serialisable dict; stored as it is.
    * ``numbers``: name -> number; the history backend writes one gauge per entry.
    * ``indexes``: extra index sets the record belongs to (for example ``cluster=prod``);
      every record is also in its kind's ``all`` index.
    * ``ttl``: seconds until the stored record expires; ``None`` keeps it until deleted.
    * ``timestamp``: when the state was observed (history samples carry it).

    The Redis layout (``docs/storage.md``)::

        <kind>:<namespace>/<name>      JSON {kind, namespace, name, document, numbers, indexes, timestamp}
        <kind>:all                      set of "<namespace>/<name>"
        <kind>:index:<index>            set of "<namespace>/<name>", per index name
    """

    kind: str = attrs.field(validator=_check_kind)
    namespace: str = attrs.field(validator=attrs.validators.instance_of(str))
    name: str = attrs.field(validator=_check(_RECORD_NAME, "Kubernetes object name"))
    document: Mapping[str, Any] = attrs.field(factory=dict, validator=attrs.validators.instance_of(dict))
    numbers: Mapping[str, float] = attrs.field(factory=dict, validator=_check_numbers)
    indexes: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_check_indexes)
    ttl: int | None = attrs.field(default=None, validator=_check_ttl)
    timestamp: datetime = attrs.field(factory=utcnow)



@attrs.frozen
class RecordDeletion(_RecordIdentity, Piece):
    """A record is gone: remove it and its index memberships (history stays)."""

    kind: str = attrs.field(validator=_check_kind)
    namespace: str = attrs.field(validator=attrs.validators.instance_of(str))
    name: str = attrs.field(validator=_check(_RECORD_NAME, "Kubernetes object name"))



@wire(omit_empty=())
@attrs.frozen
class StoredRecord:
    """A :class:`RecordPiece` as a backend stores it (the JSON value of ``<kind>:<ns>/<name>``)."""

    kind: str
    namespace: str
    name: str
    document: dict[str, Any]
    numbers: dict[str, float]
    indexes: tuple[str, ...]
    timestamp: datetime

    @classmethod
    def of(cls, piece: RecordPiece) -> StoredRecord:
        """The stored shape of a piece."""
        return cls(piece.kind, piece.namespace, piece.name, dict(piece.document), dict(piece.numbers),
                   piece.indexes, piece.timestamp)


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
