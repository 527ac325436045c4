"""Compiling a MonitorAccessPolicy spec into the ``data`` JSON the APIs read (docs/policies.md).

Every invalid input raises :class:`CompileError` naming the field (``spec.access.effect``,
``spec.identity.priority``, a pattern that is not a valid regular expression ...); the caller
keeps the last good compiled data in force.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from clusterpulse_model.policy import (
    BUILTIN_RESOURCE_TYPES,
    AggregationRules,
    ClusterRule,
    ClusterSelector,
    CompiledPolicy,
    CustomResourceVisibility,
    FieldFilter,
    PatternPair,
    ResourceFilter,
)

from clusterpulse_core.serde import dumps
from clusterpulse_core.wildcard import PatternError, check_pattern, has_wildcard
from clusterpulse_policy.kind import (
    DEFAULT_ACCESS,
    EFFECTS,
    MATCH_PATTERN_MAX_LENGTH,
    PRIORITY_DEFAULT,
    PRIORITY_MAX,
    PRIORITY_MIN,
    VISIBILITIES,
)
from clusterpulse_policy.spec import AllowDeny, Permissions, PolicySpec, ResourceSpec, Rule

#: Longest subject name accepted (it becomes part of a Redis key).
MAX_SUBJECT_LENGTH = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class CompileError(ValueError):
    """The policy cannot be compiled; the message names the field."""


def is_pattern(text: str) -> bool:
    """A name containing ``*`` or ``?`` is a pattern, anything else a literal."""
    return has_wildcard(text)


def pattern_regex(text: str) -> str:
    """``^`` + the text with ``.`` escaped, ``*`` -> ``.*``, ``?`` -> ``.`` + ``$`` (nothing else escaped)."""
    return "^" + text.replace(".", r"\.").replace("*", ".*").replace("?", ".") + "$"


def _pattern(text: str, where: str) -> PatternPair:
    """The stored pair; a pattern longer than the shared cap (docs/security.md#patterns) or whose
    regular expression does not compile is a :class:`CompileError`."""
    try:
        check_pattern(text)
    except PatternError as exc:
        raise CompileError(f"{where}: {exc}") from exc
    regex = pattern_regex(text)
    try:
        re.compile(regex)
    except re.error as exc:
        raise CompileError(f"{where}: pattern {text!r} is not a valid regular expression ({regex}: {exc})") from exc
    return (text, regex)


def _split(values: tuple[str, ...], where: str) -> tuple[tuple[str, ...], tuple[PatternPair, ...]]:
    """Literals and pattern pairs of a list, in order."""
    literals = tuple(v for v in values if not is_pattern(v))
    patterns = tuple(_pattern(v, f"{where}[{i}]") for i, v in enumerate(values) if is_pattern(v))
    return literals, patterns


def _permissions(permissions: Permissions | None) -> dict[str, bool]:
    if permissions is None:
        return {"view": True}
    found = {
        name: value
        for name, value in (("view", permissions.view), ("viewMetrics", permissions.view_metrics))
        if value is not None
    }
    return found or {"view": True}


def _resource(resource: ResourceSpec, where: str) -> ResourceFilter:
    if not resource.type:
        raise CompileError(f"{where}.type: must not be empty")
    visibility = resource.visibility or "all"
    if visibility not in VISIBILITIES:
        raise CompileError(
            f"{where}.visibility: invalid visibility {resource.visibility!r} (one of {', '.join(VISIBILITIES)})"
        )
    filters = resource.filters
    names = (filters.names if filters else None) or AllowDeny()
    namespaces = (filters.namespaces if filters else None) or AllowDeny()
    allowed_names, name_patterns = _split(names.allowed, f"{where}.filters.names.allowed")
    denied_names, deny_name_patterns = _split(names.denied, f"{where}.filters.names.denied")
    allowed_ns, ns_patterns = _split(namespaces.allowed, f"{where}.filters.namespaces.allowed")
    denied_ns, deny_ns_patterns = _split(namespaces.denied, f"{where}.filters.namespaces.denied")
    fields: dict[str, FieldFilter] = {}
    for field, values in (filters.fields if filters else {}).items():
        allowed, allowed_patterns = _split(values.allowed, f"{where}.filters.fields.{field}.allowed")
        denied, denied_patterns = _split(values.denied, f"{where}.filters.fields.{field}.denied")
        fields[field] = FieldFilter(allowed, denied, allowed_patterns, denied_patterns)
    aggregations = None
    if resource.aggregations is not None:
        aggregations = AggregationRules(resource.aggregations.include, resource.aggregations.exclude)
    return ResourceFilter(
        type=resource.type,
        visibility=visibility,
        allowed_names=allowed_names,
        denied_names=denied_names,
        name_patterns=name_patterns,
        deny_name_patterns=deny_name_patterns,
        allowed_ns=allowed_ns,
        denied_ns=denied_ns,
        ns_patterns=ns_patterns,
        deny_ns_patterns=deny_ns_patterns,
        labels=dict(filters.labels) if filters else {},
        field_filters=fields,
        aggregation_rules=aggregations,
    )


def _rule(rule: Rule, where: str) -> ClusterRule:
    selector = rule.selector
    if len(selector.match_pattern) > MATCH_PATTERN_MAX_LENGTH:
        raise CompileError(f"{where}.selector.matchPattern: longer than {MATCH_PATTERN_MAX_LENGTH} characters")
    if selector.match_pattern:
        try:
            re.compile(selector.match_pattern)
        except re.error as exc:
            raise CompileError(
                f"{where}.selector.matchPattern: {selector.match_pattern!r} is not a valid regular expression ({exc})"
            ) from exc
    resources = tuple(_resource(r, f"{where}.resources[{i}]") for i, r in enumerate(rule.resources))
    custom = {r.type: CustomResourceVisibility(r.visibility) for r in resources if r.type not in BUILTIN_RESOURCE_TYPES}
    return ClusterRule(
        cluster_selector=ClusterSelector(selector.match_names, selector.match_pattern, dict(selector.match_labels)),
        permissions=_permissions(rule.permissions),
        resources=resources,
        custom_resources=custom,
    )


def check_subject(value: str, where: str) -> str:
    """``value`` when usable as a user, group or service-account name (it becomes part of a key)."""
    if not value or len(value) > MAX_SUBJECT_LENGTH or _CONTROL.search(value):
        raise CompileError(
            f"{where}: {value!r} is not a usable name (1 to {MAX_SUBJECT_LENGTH} characters, no control characters)"
        )
    return value


def _subjects(values: tuple[str, ...], where: str) -> tuple[str, ...]:
    for i, value in enumerate(values):
        check_subject(value, f"{where}[{i}]")
    return values


def spec_hash(spec: PolicySpec) -> str:
    """First 16 hex digits of the SHA-256 of the spec's canonical JSON (changes with any spec change)."""
    return hashlib.sha256(dumps(spec)).hexdigest()[:16]


def compile_policy(name: str, namespace: str, spec: PolicySpec, now: datetime) -> CompiledPolicy:
    """The compiled policy; :class:`CompileError` naming the field when an input is invalid."""
    access, identity = spec.access, spec.identity
    if access.effect not in EFFECTS:
        raise CompileError(f"spec.access.effect: invalid effect {access.effect!r} (Allow or Deny)")
    priority = PRIORITY_DEFAULT if identity.priority is None else identity.priority
    if not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise CompileError(
            f"spec.identity.priority: invalid priority {priority} (from {PRIORITY_MIN} to {PRIORITY_MAX})"
        )
    default = spec.scope.clusters.default
    if default and default not in DEFAULT_ACCESS:
        raise CompileError(
            f"spec.scope.clusters.default: invalid value {default!r} (one of {', '.join(DEFAULT_ACCESS)})"
        )
    subjects = identity.subjects
    users = _subjects(subjects.users, "spec.identity.subjects.users")
    groups = _subjects(subjects.groups, "spec.identity.subjects.groups")
    accounts = []
    for i, account in enumerate(subjects.service_accounts):
        where = f"spec.identity.subjects.serviceAccounts[{i}]"
        _subjects((account.name,), f"{where}.name")
        _subjects((account.namespace or "default",), f"{where}.namespace")
        accounts.append(f"system:serviceaccount:{account.namespace or 'default'}:{account.name}")
    rules = tuple(_rule(rule, f"spec.scope.clusters.rules[{i}]") for i, rule in enumerate(spec.scope.clusters.rules))
    custom_types = sorted({r.type for rule in rules for r in rule.resources if r.type not in BUILTIN_RESOURCE_TYPES})
    validity = spec.lifecycle.validity if spec.lifecycle else None
    return CompiledPolicy(
        policy_name=name,
        namespace=namespace,
        priority=priority,
        effect=access.effect,
        enabled=True if access.enabled is None else access.enabled,
        users=users,
        groups=groups,
        service_accounts=tuple(accounts),
        default_cluster_access=default,
        cluster_rules=rules,
        not_before=(validity.not_before or None) if validity else None,
        not_after=(validity.not_after or None) if validity else None,
        compiled_at=now.replace(microsecond=0),
        hash=spec_hash(spec),
        custom_resource_types=tuple(custom_types),
    )
