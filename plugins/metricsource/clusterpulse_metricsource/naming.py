"""Names derived from a MetricSource: API group/version, resource plural, selector text, ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterpulse_metricsource.spec import LabelSelectorSpec

# Irregular plurals kept from upstream (docs/compatibility.md#metricsource-wire).
_IRREGULAR_PLURALS: Mapping[str, str] = {
    "endpoints": "endpoints",
    "ingress": "ingresses",
    "networkpolicy": "networkpolicies",
    "podsecuritypolicy": "podsecuritypolicies",
    "resourcequota": "resourcequotas",
    "limitrange": "limitranges",
    "serviceaccount": "serviceaccounts",
    "persistentvolume": "persistentvolumes",
    "persistentvolumeclaim": "persistentvolumeclaims",
    "storageclass": "storageclasses",
    "volumeattachment": "volumeattachments",
    "customresourcedefinition": "customresourcedefinitions",
}
_VOWELS = frozenset("aeiou")


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); no slash -> (``""``, whole); split at the first ``/``."""
    group, slash, version = api_version.partition("/")
    if not slash:
        return "", api_version
    return group, version


def pluralize(kind: str) -> str:
    """The fallback resource name of a kind when API discovery is unavailable (M7).

    Lower-cases the kind, applies the upstream irregular table, then English rules:
    ``s x ch sh`` -> ``es``, consonant + ``y`` -> ``ies``, vowel + ``y`` -> ``ys``, else ``s``.
    """
    lower = kind.lower()
    if lower in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[lower]
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and (len(lower) < 2 or lower[-2] not in _VOWELS):
        return lower[:-1] + "ies"
    return lower + "s"


def label_selector_text(selector: LabelSelectorSpec | None) -> str:
    """A label selector object as the list-call ``labelSelector`` string (docs/compatibility.md#metricsource-wire,
    M12 sorted keys)."""
    if selector is None:
        return ""
    parts = [f"{key}={selector.match_labels[key]}" for key in sorted(selector.match_labels)]
    for expression in selector.match_expressions:
        part = _expression_text(expression.key, expression.operator, expression.values)
        if part is not None:
            parts.append(part)
    return ",".join(parts)


def _expression_text(key: str, operator: str, values: Sequence[str]) -> str | None:
    if operator == "In":
        return f"{key} in ({','.join(values)})"
    if operator == "NotIn":
        return f"{key} notin ({','.join(values)})"
    if operator == "Exists":
        return key
    if operator == "DoesNotExist":
        return f"!{key}"
    return None


def resource_id(namespace: str, name: str) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object (no escaping)."""
    return f"{namespace}/{name}" if namespace else name
