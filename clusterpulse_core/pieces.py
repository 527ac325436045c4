"""The piece protocol and the generic record piece any kind can store.

A reconcile hands pieces of state to the store hook; every enabled storage backend receives
every piece (fan-out). A backend handles the pieces it understands and ignores the others,
so a new piece type never breaks an old backend. :class:`Piece` is the base of them all;
:class:`RecordPiece` is how a plugin stores state of a kind the core has never heard of,
without another plugin's internals. The ClusterPulse contract's own pieces (clusters,
registries, MetricSources, alerts, policies) are in ``clusterpulse_model.pieces``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.clock import utcnow
from clusterpulse_core.serde import wire


@attrs.frozen
class Piece:
    """Base class of everything passed to the store hook."""


# Generic records: how a plugin stores state of a kind the core has never heard of.

#: Kinds whose lower-case name is a key prefix or metric family of the upstream contract.
RESERVED_RECORD_KINDS = frozenset(
    {
        "cluster",
        "clusters",
        "registry",
        "registries",
        "metricsource",
        "metricsources",
        "events",
        "event",
        "alerts",
        "node",
        "operator",
        "custom",
        "vm",
        "store",
    }
)
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
        raise ValueError(
            f"{attribute.name}: {value!r} is reserved by the upstream key layout; choose another kind name"
        )


def _check_indexes(_instance: Any, attribute: attrs.Attribute[Any], value: tuple[str, ...]) -> None:
    for index in value:
        if not isinstance(index, str) or not _RECORD_INDEX.fullmatch(index):
            raise ValueError(
                f"{attribute.name}: {index!r} is not a valid index name "
                "(letters, digits, '_', '.', '=', '-'; no ':' or '/')"
            )


def _check_numbers(_instance: Any, attribute: attrs.Attribute[Any], value: Mapping[str, float]) -> None:
    for name, number in value.items():
        if not isinstance(name, str) or not _RECORD_NUMBER.fullmatch(name):
            raise ValueError(
                f"{attribute.name}: {name!r} is not a valid number name (a metric name part: letters, digits and '_')"
            )
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
        return cls(
            piece.kind,
            piece.namespace,
            piece.name,
            dict(piece.document),
            dict(piece.numbers),
            piece.indexes,
            piece.timestamp,
        )
