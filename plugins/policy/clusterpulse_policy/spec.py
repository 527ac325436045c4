"""The MonitorAccessPolicy spec as frozen attrs classes (wire names as the CRD's, camelCase)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from clusterpulse_core.serde import structure, wire
from clusterpulse_policy.speccheck import RawSpecError, check_raw_spec


class SpecError(ValueError):
    """The spec cannot be read; the message names the field."""


@wire(case="camel")
@attrs.frozen
class ServiceAccountRef:
    """A service account subject."""

    name: str = ""
    namespace: str = ""


@wire(case="camel")
@attrs.frozen
class Subjects:
    """Users, groups and service accounts a policy applies to."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    service_accounts: tuple[ServiceAccountRef, ...] = ()


@wire(case="camel")
@attrs.frozen
class Identity:
    """``spec.identity``."""

    subjects: Subjects = attrs.field(factory=Subjects)
    priority: int | None = None


@wire(case="camel")
@attrs.frozen
class Access:
    """``spec.access``; ``enabled`` absent means enabled."""

    effect: str = ""
    enabled: bool | None = None


@wire(case="camel")
@attrs.frozen
class Selector:
    """``rules[].selector``."""

    match_labels: dict[str, str] = attrs.field(factory=dict)
    match_names: tuple[str, ...] = ()
    match_pattern: str = ""


@wire(case="camel")
@attrs.frozen
class Permissions:
    """``rules[].permissions``; unset flags are left out of the compiled map."""

    view: bool | None = None
    view_metrics: bool | None = None


@wire(case="camel")
@attrs.frozen
class AllowDeny:
    """Allowed and denied names, namespaces or values (literals or ``*``/``?`` patterns)."""

    allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()


@wire(case="camel")
@attrs.frozen
class Filters:
    """``resources[].filters``."""

    namespaces: AllowDeny | None = None
    names: AllowDeny | None = None
    labels: dict[str, str] = attrs.field(factory=dict)
    fields: dict[str, AllowDeny] = attrs.field(factory=dict)


@wire(case="camel")
@attrs.frozen
class Aggregations:
    """``resources[].aggregations``."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@wire(case="camel")
@attrs.frozen
class ResourceSpec:
    """``rules[].resources[]``."""

    type: str = ""
    visibility: str = ""
    filters: Filters | None = None
    aggregations: Aggregations | None = None


@wire(case="camel")
@attrs.frozen
class Rule:
    """``scope.clusters.rules[]``."""

    selector: Selector = attrs.field(factory=Selector)
    permissions: Permissions | None = None
    resources: tuple[ResourceSpec, ...] = ()


@wire(case="camel")
@attrs.frozen
class Clusters:
    """``scope.clusters``."""

    default: str = ""
    rules: tuple[Rule, ...] = ()


@wire(case="camel")
@attrs.frozen
class Scope:
    """``spec.scope``."""

    clusters: Clusters = attrs.field(factory=Clusters)


@wire(case="camel")
@attrs.frozen
class Validity:
    """``spec.lifecycle.validity`` (RFC 3339 text)."""

    not_before: str = ""
    not_after: str = ""


@wire(case="camel")
@attrs.frozen
class Lifecycle:
    """``spec.lifecycle``."""

    validity: Validity = attrs.field(factory=Validity)


@wire(case="camel")
@attrs.frozen
class PolicySpec:
    """``spec`` of a MonitorAccessPolicy."""

    identity: Identity = attrs.field(factory=Identity)
    access: Access = attrs.field(factory=Access)
    scope: Scope = attrs.field(factory=Scope)
    lifecycle: Lifecycle | None = None


def parse_spec(obj: Mapping[str, Any]) -> PolicySpec:
    """The spec of a raw object; :class:`SpecError` when a field has the wrong type."""
    raw = obj.get("spec")
    if not isinstance(raw, Mapping):
        raise SpecError("spec: missing or not an object")
    try:
        check_raw_spec(raw)
    except RawSpecError as exc:
        raise SpecError(f"spec: {exc}") from exc
    try:
        return structure(dict(raw), PolicySpec)
    except Exception as exc:  # cattrs raises a (nested) ClassValidationError or a plain type error
        raise SpecError(f"spec: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    """The innermost messages of a cattrs error, one line."""
    nested = getattr(exc, "exceptions", None)
    if nested:
        return "; ".join(_describe(inner) for inner in nested)
    notes = "; ".join(getattr(exc, "__notes__", ()) or ())
    return f"{notes}: {exc}" if notes else str(exc)
