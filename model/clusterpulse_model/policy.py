"""Compiled access policies (MonitorAccessPolicy): what the ClusterPulse APIs read to authorize.

The compiled form is the ``data`` JSON of ``policy:<ns>:<name>``, field for field and in the
upstream order; every list is written as ``[]`` when empty, never ``null`` (the former Python
API iterates them without a null guard). ``custom_resources`` on each cluster rule is what the
former Python API reads for custom types; the Go API ignores it. See ``docs/policies.md``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.serde import parse_time, wire

#: Resource types the APIs know without a MetricSource.
BUILTIN_RESOURCE_TYPES = frozenset({"nodes", "operators", "namespaces", "pods"})

#: Policy states (``status.state`` and the Redis ``status`` field).
ACTIVE = "Active"
INACTIVE = "Inactive"
EXPIRED = "Expired"
ERROR = "Error"
PENDING = "Pending"

#: A stored pattern: ``(original, anchored regex)``.
PatternPair = tuple[str, str]


@wire(omit_empty=("allowed_literals", "denied_literals", "allowed_patterns", "denied_patterns"))
@attrs.frozen
class FieldFilter:
    """Allowed/denied values of one field of a custom resource (literals and patterns)."""

    allowed_literals: tuple[str, ...] = ()
    denied_literals: tuple[str, ...] = ()
    allowed_patterns: tuple[PatternPair, ...] = ()
    denied_patterns: tuple[PatternPair, ...] = ()


@attrs.frozen
class AggregationRules:
    """Which aggregations of a custom type a policy lets through (both lists always written)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@wire(
    omit_empty=(
        "allowed_names",
        "denied_names",
        "name_patterns",
        "deny_name_patterns",
        "allowed_ns",
        "denied_ns",
        "ns_patterns",
        "deny_ns_patterns",
        "labels",
        "field_filters",
        "aggregation_rules",
    )
)
@attrs.frozen
class ResourceFilter:
    """What a cluster rule lets through of one resource type."""

    type: str
    visibility: str = "all"
    allowed_names: tuple[str, ...] = ()
    denied_names: tuple[str, ...] = ()
    name_patterns: tuple[PatternPair, ...] = ()
    deny_name_patterns: tuple[PatternPair, ...] = ()
    allowed_ns: tuple[str, ...] = ()
    denied_ns: tuple[str, ...] = ()
    ns_patterns: tuple[PatternPair, ...] = ()
    deny_ns_patterns: tuple[PatternPair, ...] = ()
    labels: dict[str, str] = attrs.field(factory=dict)
    field_filters: dict[str, FieldFilter] = attrs.field(factory=dict)
    aggregation_rules: AggregationRules | None = None


@wire(case="camel", omit_empty=("match_names", "match_pattern", "match_labels"))
@attrs.frozen
class ClusterSelector:
    """Which clusters a rule applies to (``matchNames`` compared exactly, ``matchPattern`` a regex)."""

    match_names: tuple[str, ...] = ()
    match_pattern: str = ""
    match_labels: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class CustomResourceVisibility:
    """The former Python API's view of one custom type in a rule."""

    visibility: str = "all"


@attrs.frozen
class ClusterRule:
    """One compiled ``scope.clusters.rules`` entry."""

    cluster_selector: ClusterSelector = attrs.field(factory=ClusterSelector)
    permissions: dict[str, bool] = attrs.field(factory=lambda: {"view": True})
    resources: tuple[ResourceFilter, ...] = ()
    custom_resources: dict[str, CustomResourceVisibility] = attrs.field(factory=dict)


@attrs.frozen
class CompiledPolicy:
    """The ``data`` JSON of ``policy:<ns>:<name>`` (upstream field order)."""

    policy_name: str
    namespace: str
    priority: int
    effect: str
    enabled: bool = True
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    service_accounts: tuple[str, ...] = ()
    default_cluster_access: str = ""
    cluster_rules: tuple[ClusterRule, ...] = ()
    not_before: str | None = None
    not_after: str | None = None
    compiled_at: datetime = attrs.field(factory=lambda: parse_time("1970-01-01T00:00:00Z"))
    hash: str = ""
    custom_resource_types: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``policy:<ns>:<name>``: the hash and the member of every index."""
        return policy_key(self.namespace, self.policy_name)


def policy_key(namespace: str, name: str) -> str:
    """``policy:<ns>:<name>``."""
    return f"policy:{namespace}:{name}"


@wire(case="camel")
@attrs.frozen
class PolicyStatusRecord:
    """The Redis ``status`` field written after a successful compile."""

    state: str
    message: str
    compiled_at: datetime
    hash: str
    affected_users: int = 0
    affected_groups: int = 0
    affected_service_accounts: int = 0
    custom_resource_types: int = 0

    @classmethod
    def of(cls, policy: CompiledPolicy, state: str, message: str) -> PolicyStatusRecord:
        """The status of a compiled policy in ``state``."""
        return cls(
            state,
            message,
            policy.compiled_at,
            policy.hash,
            len(policy.users),
            len(policy.groups),
            len(policy.service_accounts),
            len(policy.custom_resource_types),
        )


@attrs.frozen
class PolicyErrorRecord:
    """The Redis ``status`` field after a failed compile (the last good ``data`` stays)."""

    message: str
    error_at: datetime
    state: str = ERROR


@attrs.frozen
class PolicyValidatedRecord:
    """The Redis ``status`` field the periodic validator writes (replaces the whole field)."""

    state: str
    message: str
    validated_at: datetime


@attrs.frozen
class StoredPolicy:
    """One compiled policy as read back from storage for a principal (``data`` None: unreadable)."""

    key: str
    priority: float
    data: dict[str, Any] | None = None


def _instant(text: str | None) -> datetime | None:
    """A parsed validity bound; ``None`` when empty or unparseable (ignored, as upstream)."""
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


def policy_state(enabled: bool, not_before: str | None, not_after: str | None, now: datetime) -> tuple[str, str]:
    """``(state, message)`` of a policy at ``now``: validity window first, then ``enabled``."""
    start, end = _instant(not_before), _instant(not_after)
    if start is not None and now < start:
        return INACTIVE, "Policy not yet valid"
    if end is not None and now > end:
        return EXPIRED, "Policy expired"
    if not enabled:
        return INACTIVE, "Policy is disabled"
    return ACTIVE, "Policy is active"


def next_transition(not_before: str | None, not_after: str | None, now: datetime) -> datetime | None:
    """The next instant the state of a policy changes by time alone (``None``: never)."""
    future = [moment for moment in (_instant(not_before), _instant(not_after)) if moment is not None and moment >= now]
    return min(future) if future else None
