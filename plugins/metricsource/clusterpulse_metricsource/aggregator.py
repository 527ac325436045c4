"""Aggregating the records of one cluster (docs/compatibility.md#metricsource-language with M9–M11).

Functions and filter operators come from the :class:`~clusterpulse_metricsource.catalog.Catalog`,
so a plugin-registered function (``median``) aggregates exactly like a built-in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from clusterpulse_metricsource.catalog import AggregationFunction, Catalog, FilterPredicate
from clusterpulse_metricsource.compiled import CompiledAggregation, CompiledFilter
from clusterpulse_metricsource.failures import FailureTally
from clusterpulse_metricsource.textform import scalar_text

UNKNOWN_GROUP = "_unknown_"

Values = Mapping[str, Any]


def group_key(value: Any) -> str:
    """The group of a ``groupBy`` value (M9): text for strings, numbers and bools, else ``_unknown_``."""
    text = None if value is None else scalar_text(value)
    return UNKNOWN_GROUP if text is None else text


def passes(values: Values, filter_spec: CompiledFilter | None, predicate: FilterPredicate | None) -> bool:
    """Whether a resource passes a filter: no filter passes; a missing/null field or unknown operator fails."""
    if filter_spec is None:
        return True
    field_value = values.get(filter_spec.field)
    if field_value is None or predicate is None:
        return False
    try:
        return bool(predicate(field_value, filter_spec.value))
    except Exception:  # a third-party operator's failure excludes the resource, never the aggregation
        return False


def _finite(result: Any) -> Any:
    if type(result) is float and not math.isfinite(result):
        return None
    return result


@attrs.frozen
class AggregationPlan:
    """One aggregation bound to its function and filter operator (``None`` when unregistered)."""

    spec: CompiledAggregation
    function: AggregationFunction | None
    predicate: FilterPredicate | None

    @classmethod
    def bind(cls, spec: CompiledAggregation, catalog: Catalog) -> AggregationPlan:
        """Look the function and operator up in the catalog."""
        predicate = catalog.filter_operators.get(spec.filter.operator) if spec.filter else None
        return cls(spec, catalog.aggregations.get(spec.function), predicate)

    def run(self, records: Sequence[Values], tally: FailureTally | None = None) -> Any:
        """The result over ``records``: one value, or a map group -> value with ``groupBy``.

        A function that raises gives ``None`` for that value; the failure goes to ``tally``.
        """
        matched = [v for v in records if passes(v, self.spec.filter, self.predicate)]
        if not self.spec.group_by:
            return self._apply(matched, tally)
        groups: dict[str, list[Values]] = {}
        for values in matched:
            groups.setdefault(group_key(values.get(self.spec.group_by)), []).append(values)
        return {key: self._apply(members, tally) for key, members in groups.items()}

    def _apply(self, matched: Sequence[Values], tally: FailureTally | None = None) -> Any:
        if self.function is None:
            return None
        if self.function.needs_field:
            field = self.spec.field
            inputs: list[Any] = [v[field] for v in matched if v.get(field) is not None]
        else:
            inputs = list(matched)
        try:
            return _finite(self.function.fn(inputs, self.spec))
        except Exception as exc:  # a failing (third-party) function gives no value rather than no results
            if tally is not None:
                tally.add(f'aggregation "{self.spec.name}"', self.spec.function, exc)
            return None


def aggregate(
    records: Sequence[Values], plans: Sequence[AggregationPlan], tally: FailureTally | None = None
) -> dict[str, Any]:
    """Aggregation name -> result (a later aggregation with the same name wins)."""
    return {plan.spec.name: plan.run(records, tally) for plan in plans}
