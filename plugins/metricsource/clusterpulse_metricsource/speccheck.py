"""Every field of a raw MetricSource ``spec`` checked before it is structured: types without
coercion (a number where a string belongs is not turned into one), lengths, counts and ranges.

The first bad field is reported by its wire path (``spec.collection.intervalSeconds``); the CRD
schema (crd.py) states the same bounds, so an API server refuses most of these first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Longest name (a field, computed field, aggregation or resource type name).
MAX_NAME = 253
#: Longest field path, filter value, default or label-selector value.
MAX_TEXT = 1_024
#: Longest computed expression.
MAX_EXPRESSION = 4_096
#: Most entries in ``fields``, ``computed``, ``aggregations`` and every other list.
MAX_ITEMS = 256
#: Upper bound of each ``spec.collection`` integer (0 means the default; negative is refused, except a
#: negative ``retryAttempts``, which means the default 3 as upstream decided).
COLLECTION_MAXIMUM = {
    "intervalSeconds": 86_400,
    "timeoutSeconds": 3_600,
    "maxResources": 1_000_000,
    "batchSize": 100_000,
    "retryAttempts": 100,
    "parallelism": 64,
}


class RawSpecError(Exception):
    """A field of the wrong type, length or range; ``field`` is its wire path."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"invalid spec: {field} {problem}")
        self.field = field
        self.problem = problem


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RawSpecError(field, f"must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RawSpecError(field, f"must be a list, got {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise RawSpecError(field, f"has more than {MAX_ITEMS} entries ({len(value)})")
    return value


def _string(value: Any, field: str, limit: int = MAX_NAME) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise RawSpecError(field, f"must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise RawSpecError(field, f"is longer than {limit} characters ({len(value)})")


def _strings(raw: Mapping[str, Any], where: str, limits: Mapping[str, int]) -> None:
    for key, limit in limits.items():
        _string(raw.get(key), f"{where}.{key}", limit)


def _integer(value: Any, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RawSpecError(field, f"must be an integer, got {type(value).__name__}")
    return value


def _source(raw: Any) -> None:
    source = _object(raw, "spec.source")
    _strings(source, "spec.source", {"apiVersion": MAX_NAME, "kind": MAX_NAME, "scope": MAX_NAME})
    namespaces = _object(source.get("namespaces"), "spec.source.namespaces")
    for key in ("include", "exclude"):
        for i, pattern in enumerate(_list(namespaces.get(key), f"spec.source.namespaces.{key}")):
            _string(pattern, f"spec.source.namespaces.{key}[{i}]", MAX_TEXT)
    selector = _object(source.get("labelSelector"), "spec.source.labelSelector")
    labels = _object(selector.get("matchLabels"), "spec.source.labelSelector.matchLabels")
    if len(labels) > MAX_ITEMS:
        raise RawSpecError("spec.source.labelSelector.matchLabels", f"has more than {MAX_ITEMS} entries")
    for key, value in labels.items():
        _string(value, f"spec.source.labelSelector.matchLabels.{str(key)[:64]}", MAX_TEXT)
    where = "spec.source.labelSelector.matchExpressions"
    for i, item in enumerate(_list(selector.get("matchExpressions"), where)):
        expression = _object(item, f"{where}[{i}]")
        _strings(expression, f"{where}[{i}]", {"key": MAX_TEXT, "operator": MAX_NAME})
        for j, value in enumerate(_list(expression.get("values"), f"{where}[{i}].values")):
            _string(value, f"{where}[{i}].values[{j}]", MAX_TEXT)


def check_raw_spec(raw: Mapping[str, Any]) -> None:
    """Raise :class:`RawSpecError` naming the first field of ``raw`` with a wrong type, length or range."""
    _source(raw.get("source"))
    if raw.get("fields") is not None:
        for i, item in enumerate(_list(raw.get("fields"), "spec.fields")):
            _strings(
                _object(item, f"spec.fields[{i}]"),
                f"spec.fields[{i}]",
                {"name": MAX_NAME, "path": MAX_TEXT, "type": MAX_NAME, "default": MAX_TEXT},
            )
    for i, item in enumerate(_list(raw.get("computed"), "spec.computed")):
        _strings(
            _object(item, f"spec.computed[{i}]"),
            f"spec.computed[{i}]",
            {"name": MAX_NAME, "expression": MAX_EXPRESSION, "type": MAX_NAME},
        )
    for i, item in enumerate(_list(raw.get("aggregations"), "spec.aggregations")):
        where = f"spec.aggregations[{i}]"
        aggregation = _object(item, where)
        _strings(aggregation, where, {"name": MAX_NAME, "field": MAX_NAME, "function": MAX_NAME, "groupBy": MAX_NAME})
        _integer(aggregation.get("percentile"), f"{where}.percentile")
        if aggregation.get("filter") is not None:
            _strings(
                _object(aggregation["filter"], f"{where}.filter"),
                f"{where}.filter",
                {"field": MAX_NAME, "operator": MAX_NAME, "value": MAX_TEXT},
            )
    collection = _object(raw.get("collection"), "spec.collection")
    for key, high in COLLECTION_MAXIMUM.items():
        value = _integer(collection.get(key), f"spec.collection.{key}")
        low = -(2**31) if key == "retryAttempts" else 0
        if value is not None and not low <= value <= high:
            raise RawSpecError(
                f"spec.collection.{key}", f"must be between {max(low, 0)} (the default) and {high}, got {value}"
            )
    rbac = _object(raw.get("rbac"), "spec.rbac")
    _string(rbac.get("resourceTypeName"), "spec.rbac.resourceTypeName")
    for i, name in enumerate(_list(rbac.get("filterableFields"), "spec.rbac.filterableFields")):
        _string(name, f"spec.rbac.filterableFields[{i}]")
    value = rbac.get("filterAggregations")
    if value is not None and not isinstance(value, bool):
        raise RawSpecError("spec.rbac.filterAggregations", f"must be true or false, got {type(value).__name__}")
