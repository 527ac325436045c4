"""Evaluating the compiled policies as the ClusterPulse (Go) API does (docs/policies.md, "can-i").

Policies come highest priority first; disabled ones and those outside their validity window
(or with an unparseable bound) are skipped; the first policy that matches decides:

* the cluster itself: the first rule whose ``matchNames`` contains the cluster or whose
  ``matchPattern`` (a regular expression, unanchored) finds it; ``matchLabels`` never match (the
  API passes no labels); ``default_cluster_access`` does not apply to the cluster object;
* a built-in resource type in a cluster: the same rule, else ``default_cluster_access: allow``
  gives ``view`` without filters; a rule listing resources makes the answer ``partial``, and the
  type's own filter with visibility ``none`` hides the type;
* a custom type: the cluster must be visible; then a Deny policy with a cluster-matching rule
  listing the type denies, the first Allow policy whose cluster-matching rule lists it with a
  visibility other than ``none`` allows (``partial`` when filtered); nothing listing it denies.

A matching Deny policy denies. The action is not checked (a match allows every action); the
permissions only gate node metrics history (``view_metrics``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
from clusterpulse_model.policy import BUILTIN_RESOURCE_TYPES, StoredPolicy

from clusterpulse_core.serde import parse_time

ALLOW, PARTIAL, DENY = "allow", "partial", "deny"


@attrs.frozen
class Considered:
    """One policy looked at, and what came of it."""

    policy: str
    priority: float
    outcome: str


@attrs.frozen
class Decision:
    """What a principal may see: ``allow``, ``partial`` (filtered) or ``deny``, the deciding policy and why."""

    decision: str
    reason: str
    policy: str = ""
    priority: float | None = None
    permissions: tuple[str, ...] = ()
    filter: dict[str, Any] | None = None
    considered: tuple[Considered, ...] = ()


def _skip_reason(data: Mapping[str, Any], now: datetime) -> str:
    """Why the API ignores a policy now, or ``""``."""
    if data.get("enabled") is False:
        return "disabled"
    for field, after in (("not_before", False), ("not_after", True)):
        text = data.get(field)
        if not text:
            continue
        try:
            bound = parse_time(str(text))
        except ValueError:
            return f"unparseable {field} {text!r}"
        if (now > bound) if after else (now < bound):
            return "expired" if after else "not yet valid"
    return ""


def _rules(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rules = data.get("cluster_rules")
    return [rule for rule in rules if isinstance(rule, Mapping)] if isinstance(rules, list) else []


def _selects(rule: Mapping[str, Any], cluster: str) -> str:
    """How a rule's selector matches the cluster (``""``: it does not)."""
    selector = rule.get("cluster_selector") or {}
    names = selector.get("matchNames") or []
    if isinstance(names, list) and cluster in names:
        return f"matchNames contains {cluster!r}"
    pattern = selector.get("matchPattern")
    if isinstance(pattern, str) and pattern:
        try:
            if re.search(pattern, cluster):
                return f"matchPattern {pattern!r} finds {cluster!r}"
        except re.error:
            return ""
    return ""


def _first_rule(data: Mapping[str, Any], cluster: str) -> tuple[int, Mapping[str, Any], str] | None:
    for index, rule in enumerate(_rules(data)):
        how = _selects(rule, cluster)
        if how:
            return index, rule, how
    return None


def _permissions(rule: Mapping[str, Any] | None) -> tuple[str, ...]:
    if rule is None:
        return ("view",)
    granted = rule.get("permissions") or {}
    return tuple(name for key, name in (("view", "view"), ("viewMetrics", "view_metrics")) if granted.get(key))


def _filter_for(rule: Mapping[str, Any], resource: str) -> Mapping[str, Any] | None:
    for item in rule.get("resources") or ():
        if isinstance(item, Mapping) and item.get("type") == resource:
            return item
    return None


def _usable(
    policies: Sequence[StoredPolicy], now: datetime, considered: list[Considered]
) -> list[tuple[StoredPolicy, Mapping[str, Any]]]:
    usable: list[tuple[StoredPolicy, Mapping[str, Any]]] = []
    for policy in policies:
        if policy.data is None:
            considered.append(Considered(policy.key, policy.priority, "skipped: no readable data"))
            continue
        why = _skip_reason(policy.data, now)
        if why:
            considered.append(Considered(policy.key, policy.priority, f"skipped: {why}"))
            continue
        usable.append((policy, policy.data))
    return usable


def can_i(policies: Sequence[StoredPolicy], cluster: str, resource: str | None, now: datetime) -> Decision:
    """The decision for ``cluster`` (``resource`` None) or one resource type in it."""
    considered: list[Considered] = []
    usable = _usable(policies, now, considered)
    if resource is not None and resource not in BUILTIN_RESOURCE_TYPES:
        return _custom(usable, cluster, resource, now, policies, considered)
    for policy, data in usable:
        found = _first_rule(data, cluster)
        if found is not None:
            index, rule, how = found
            why = f"rule {index} ({how})"
        elif resource is not None and data.get("default_cluster_access") == "allow":
            rule, why = None, "default cluster access 'allow'"
        else:
            considered.append(Considered(policy.key, policy.priority, "no rule matches the cluster"))
            continue
        effect = data.get("effect")
        if effect != "Allow":
            considered.append(Considered(policy.key, policy.priority, f"decides: {effect} by {why}"))
            return Decision(
                DENY, f"{effect} policy matches by {why}", policy.key, policy.priority, considered=tuple(considered)
            )
        considered.append(Considered(policy.key, policy.priority, f"decides: Allow by {why}"))
        permissions = _permissions(rule)
        if resource is None or rule is None or not rule.get("resources"):
            return Decision(
                ALLOW,
                f"Allow policy matches by {why}",
                policy.key,
                policy.priority,
                permissions,
                considered=tuple(considered),
            )
        item = _filter_for(rule, resource)
        if item is not None and item.get("visibility") == "none":
            return Decision(
                DENY,
                f"Allow policy matches by {why}, but hides {resource} (visibility none)",
                policy.key,
                policy.priority,
                permissions,
                dict(item),
                tuple(considered),
            )
        return Decision(
            PARTIAL,
            f"Allow policy matches by {why}; the rule restricts resources"
            + ("" if item is None else f" ({resource}: visibility {item.get('visibility')})"),
            policy.key,
            policy.priority,
            permissions,
            None if item is None else dict(item),
            tuple(considered),
        )
    return Decision(DENY, "no policy matches (default deny)", considered=tuple(considered))


def _custom(
    usable: list[tuple[StoredPolicy, Mapping[str, Any]]],
    cluster: str,
    resource: str,
    now: datetime,
    policies: Sequence[StoredPolicy],
    considered: list[Considered],
) -> Decision:
    access = can_i(policies, cluster, None, now)
    if access.decision == DENY:
        return Decision(
            DENY,
            f"the cluster is not visible: {access.reason}",
            access.policy,
            access.priority,
            considered=access.considered,
        )
    for policy, data in usable:
        for index, rule in enumerate(_rules(data)):
            how = _selects(rule, cluster)
            item = _filter_for(rule, resource) if how else None
            if item is None:
                continue
            why = f"rule {index} ({how}) lists {resource}"
            if data.get("effect") != "Allow":
                considered.append(Considered(policy.key, policy.priority, f"decides: {data.get('effect')} by {why}"))
                return Decision(
                    DENY,
                    f"{data.get('effect')} policy: {why}",
                    policy.key,
                    policy.priority,
                    considered=tuple(considered),
                )
            if item.get("visibility") == "none":
                continue
            considered.append(Considered(policy.key, policy.priority, f"decides: Allow by {why}"))
            filtered = item.get("visibility") == "filtered" or any(key not in ("type", "visibility") for key in item)
            return Decision(
                PARTIAL if filtered else ALLOW,
                f"Allow policy: {why} (visibility {item.get('visibility')})",
                policy.key,
                policy.priority,
                _permissions(rule),
                dict(item),
                tuple(considered),
            )
        considered.append(Considered(policy.key, policy.priority, f"no cluster-matching rule lists {resource}"))
    return Decision(DENY, f"no policy grants {resource} on {cluster!r}", considered=tuple(considered))
