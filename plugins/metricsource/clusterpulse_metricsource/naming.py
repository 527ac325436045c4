"""Names derived from a MetricSource: API group/version, resource plural, selector text, ids."""

from __future__ import annotations

import re
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

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#: ``source.apiVersion``: ``VERSION`` (the core group) or ``GROUP/VERSION``, a DNS-1123 subdomain and
#: label as the API server requires of them (the CRD's ``pattern``, checked again when compiling).
API_VERSION_PATTERN = rf"^({_DNS_LABEL}(\.{_DNS_LABEL})*/)?{_DNS_LABEL}$"
API_VERSION_MAX_LENGTH = 253 + 1 + 63
#: ``source.kind``: a letter, then letters, digits and inner ``-`` (a kind lower-cased is a DNS-1035 label).
KIND_PATTERN = r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$"
KIND_MAX_LENGTH = 63
_API_VERSION = re.compile(API_VERSION_PATTERN)
_KIND = re.compile(KIND_PATTERN)


def api_version_problem(api_version: str) -> str:
    """Why ``api_version`` is not a valid ``source.apiVersion`` (``/v1``, ``*/v1``, ``Apps/v1``), or ``""``."""
    if len(api_version) > API_VERSION_MAX_LENGTH or not _API_VERSION.fullmatch(api_version):
        return (
            f"source.apiVersion {api_version!r} is not VERSION or GROUP/VERSION (lower-case DNS names, "
            f"e.g. v1, apps/v1)"
        )
    return ""


def kind_problem(kind: str) -> str:
    """Why ``kind`` is not a valid ``source.kind`` (a ``*``, a ``/``, spaces), or ``""``."""
    if len(kind) > KIND_MAX_LENGTH or not _KIND.fullmatch(kind):
        return f"source.kind {kind!r} is not a kind name (letters and digits, e.g. PersistentVolumeClaim)"
    return ""


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
