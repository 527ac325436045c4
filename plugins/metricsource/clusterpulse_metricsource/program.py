"""The executable form of a compiled MetricSource: extract, compute and aggregate.

A :class:`Program` is built once per compile and then applied to many objects; it holds the
wire form (:class:`CompiledMetricSource`) plus what is never serialised: field extractors,
compiled expressions in dependency order, the namespace filter and the bound aggregations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
from clusterpulse_metricsource.aggregator import AggregationPlan, aggregate
from clusterpulse_metricsource.compiled import CompiledMetricSource
from clusterpulse_metricsource.expr import coerce_result
from clusterpulse_metricsource.extractor import FieldExtractor, finite_or_none
from clusterpulse_metricsource.failures import FailureTally, FunctionError
from clusterpulse_metricsource.namespaces import NamespaceFilter
from clusterpulse_metricsource.naming import resource_id
from clusterpulse_metricsource.paths import NOT_FOUND, compile_steps, walk
from clusterpulse_model import CollectedResource

_NAME = compile_steps(("metadata", "name"))
_NAMESPACE = compile_steps(("metadata", "namespace"))
_LABELS = compile_steps(("metadata", "labels"))
#: Paths every record reads besides the fields (its identity).
IDENTITY_STEPS = (_NAME, _NAMESPACE, _LABELS)


@attrs.frozen
class ComputedStep:
    """One computed field ready to evaluate: its compiled expression and result type."""

    name: str
    expression: Any  # clusterpulse_metricsource.expr.CompiledExpression
    type: str

    def evaluate(self, values: dict[str, Any], tally: FailureTally | None = None) -> Any:
        """The coerced result, or ``None`` when evaluation fails (the resource is still kept).

        A failure is an error of a (plugin) function: it is tallied in ``tally`` when given.
        """
        try:
            return finite_or_none(coerce_result(self.expression.evaluate(values), self.type))
        except Exception as exc:  # an evaluation error only empties this field
            if tally is not None:
                function = exc.function if isinstance(exc, FunctionError) else "expression"
                tally.add(
                    f'computed field "{self.name}"', function, exc.cause if isinstance(exc, FunctionError) else exc
                )
            return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _labels(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else str(v) for k, v in value.items()}


@attrs.frozen
class Program:
    """A compiled MetricSource that can be run over objects."""

    compiled: CompiledMetricSource
    extractors: tuple[FieldExtractor, ...]
    #: Computed fields in evaluation (dependency) order.
    computed: tuple[ComputedStep, ...]
    aggregations: tuple[AggregationPlan, ...]
    namespace_filter: NamespaceFilter | None = None

    @property
    def source_id(self) -> str:
        """``<namespace>/<name>`` of the MetricSource."""
        return self.compiled.source_id

    def values(self, obj: Any, tally: FailureTally | None = None) -> dict[str, Any]:
        """Every extracted and computed field of one object (keys in spec order, ``None`` = no value)."""
        values = {extractor.name: extractor.extract(obj) for extractor in self.extractors}
        if self.computed:
            for spec in self.compiled.computed:
                values[spec.name] = None
            for step in self.computed:
                values[step.name] = step.evaluate(values, tally)
        return values

    def record(self, obj: Any, tally: FailureTally | None = None) -> CollectedResource:
        """One object as a stored resource: identity plus values."""
        name = _text(walk(obj, _NAME))
        namespace = _text(walk(obj, _NAMESPACE))
        labels = walk(obj, _LABELS)
        return CollectedResource(
            id=resource_id(namespace, name),
            name=name,
            namespace=namespace,
            labels=_labels(labels) if labels is not NOT_FOUND else {},
            values=self.values(obj, tally),
        )

    def records(self, objects: Iterable[Any], tally: FailureTally | None = None) -> list[CollectedResource]:
        """Records of many objects, in order."""
        return [self.record(obj, tally) for obj in objects]

    def aggregate(self, records: Sequence[CollectedResource], tally: FailureTally | None = None) -> dict[str, Any]:
        """Aggregation name -> result over the records (a function that raises gives ``None``, tallied)."""
        return aggregate([r.values for r in records], self.aggregations, tally)
