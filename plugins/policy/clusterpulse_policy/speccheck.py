"""Every field of a raw MonitorAccessPolicy ``spec`` checked before it is structured: types
without coercion (``enabled: "false"`` or ``priority: "100"`` is refused, not converted), string
lengths and list sizes. The first bad field is named by its wire path; the compiler then checks
values (effect, priority range, patterns, subjects)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: Longest string anywhere in a spec (subjects and patterns have their own, smaller caps).
MAX_STRING = 1_024
#: Most entries in any list or map of a spec.
MAX_ITEMS = 1_000


class RawSpecError(ValueError):
    """A field of the wrong type or size; the message starts with its wire path."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RawSpecError(field, f"must be an object, got {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise RawSpecError(field, f"has more than {MAX_ITEMS} entries ({len(value)})")
    return value


def _string(value: Any, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise RawSpecError(field, f"must be a string, got {type(value).__name__}")
    if len(value) > MAX_STRING:
        raise RawSpecError(field, f"is longer than {MAX_STRING} characters ({len(value)})")


def _boolean(value: Any, field: str) -> None:
    if value is not None and not isinstance(value, bool):
        raise RawSpecError(field, f"must be true or false, got {type(value).__name__}")


def _list(value: Any, field: str, item: Callable[[Any, str], Any] = _string) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise RawSpecError(field, f"must be a list, got {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise RawSpecError(field, f"has more than {MAX_ITEMS} entries ({len(value)})")
    for i, entry in enumerate(value):
        item(entry, f"{field}[{i}]")


def _string_map(value: Any, field: str) -> None:
    for key, entry in _object(value, field).items():
        _string(entry, f"{field}.{str(key)[:64]}")


def _allow_deny(value: Any, field: str) -> None:
    raw = _object(value, field)
    _list(raw.get("allowed"), f"{field}.allowed")
    _list(raw.get("denied"), f"{field}.denied")


def _account(value: Any, field: str) -> None:
    raw = _object(value, field)
    _string(raw.get("name"), f"{field}.name")
    _string(raw.get("namespace"), f"{field}.namespace")


def _resource(value: Any, field: str) -> None:
    raw = _object(value, field)
    _string(raw.get("type"), f"{field}.type")
    _string(raw.get("visibility"), f"{field}.visibility")
    filters = _object(raw.get("filters"), f"{field}.filters")
    _allow_deny(filters.get("namespaces"), f"{field}.filters.namespaces")
    _allow_deny(filters.get("names"), f"{field}.filters.names")
    _string_map(filters.get("labels"), f"{field}.filters.labels")
    for key, entry in _object(filters.get("fields"), f"{field}.filters.fields").items():
        _allow_deny(entry, f"{field}.filters.fields.{str(key)[:64]}")
    aggregations = _object(raw.get("aggregations"), f"{field}.aggregations")
    _list(aggregations.get("include"), f"{field}.aggregations.include")
    _list(aggregations.get("exclude"), f"{field}.aggregations.exclude")


def _rule(value: Any, field: str) -> None:
    raw = _object(value, field)
    selector = _object(raw.get("selector"), f"{field}.selector")
    _string_map(selector.get("matchLabels"), f"{field}.selector.matchLabels")
    _list(selector.get("matchNames"), f"{field}.selector.matchNames")
    _string(selector.get("matchPattern"), f"{field}.selector.matchPattern")
    permissions = _object(raw.get("permissions"), f"{field}.permissions")
    _boolean(permissions.get("view"), f"{field}.permissions.view")
    _boolean(permissions.get("viewMetrics"), f"{field}.permissions.viewMetrics")
    _list(raw.get("resources"), f"{field}.resources", _resource)


def check_raw_spec(raw: Mapping[str, Any]) -> None:
    """Raise :class:`RawSpecError` naming the first field of ``raw`` with a wrong type or size."""
    identity = _object(raw.get("identity"), "spec.identity")
    priority = identity.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise RawSpecError("spec.identity.priority", f"must be an integer, got {type(priority).__name__}")
    subjects = _object(identity.get("subjects"), "spec.identity.subjects")
    _list(subjects.get("users"), "spec.identity.subjects.users")
    _list(subjects.get("groups"), "spec.identity.subjects.groups")
    _list(subjects.get("serviceAccounts"), "spec.identity.subjects.serviceAccounts", _account)
    access = _object(raw.get("access"), "spec.access")
    _string(access.get("effect"), "spec.access.effect")
    _boolean(access.get("enabled"), "spec.access.enabled")
    clusters = _object(_object(raw.get("scope"), "spec.scope").get("clusters"), "spec.scope.clusters")
    _string(clusters.get("default"), "spec.scope.clusters.default")
    _list(clusters.get("rules"), "spec.scope.clusters.rules", _rule)
    validity = _object(_object(raw.get("lifecycle"), "spec.lifecycle").get("validity"), "spec.lifecycle.validity")
    _string(validity.get("notBefore"), "spec.lifecycle.validity.notBefore")
    _string(validity.get("notAfter"), "spec.lifecycle.validity.notAfter")
