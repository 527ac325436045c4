# mypy: disable-error-code="empty-body"
"""The hooks the MetricSource plugin declares (through ``clusterpulse_addhooks``).

Its vocabulary registries (aggregations, field types, filter operators), its expression
compiler for other plugins to reuse, and the aggregation of a pushed batch. Another plugin
implementing one of these marks it ``@hookimpl(optionalhook=True)`` when it must load without
this plugin; a caller reaches them through ``PluginHost.hook``, ``None`` when this plugin is not
loaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from clusterpulse_core.hookspecs import Register, called, hookspec, registry

if TYPE_CHECKING:
    from clusterpulse_model import AggregationResults, CollectedResource


class CompiledExpression(Protocol):
    """A compiled expression, as returned by the compiler of ``clusterpulse_expression_compiler``."""

    #: The identifiers the expression reads, unique, in order of first appearance.
    references: tuple[str, ...]

    def evaluate(self, values: Mapping[str, Any] | None) -> Any:
        """The expression's value with identifiers looked up in ``values`` (missing ones are null)."""


class ExpressionCompiler(Protocol):
    """``compile(text, functions)``: what ``clusterpulse_expression_compiler`` returns."""

    def __call__(self, text: str, functions: Mapping[str, Any], /) -> CompiledExpression: ...


@hookspec
@registry("aggregations")
def clusterpulse_register_aggregations(register: Register) -> None:
    """Register aggregation functions usable in MetricSource ``aggregations``.

    ``register(name, fn, needs_field=True)``: ``fn(values, spec)`` receives the list of
    the (non-null) field values of the matching resources and the aggregation spec (for
    parameters such as ``percentile``), and returns the result value. The values may mix
    numbers and text: :func:`clusterpulse_model.values.numbers` keeps the numbers. A function
    that raises gives ``null`` and is reported like a failing expression function.
    """


@hookspec
@registry("field_types")
def clusterpulse_register_field_types(register: Register) -> None:
    """Register MetricSource field types (``string``, ``integer``, ``quantity`` ...).

    ``register(name, convert, convert_default)``: ``convert(value)`` turns an extracted JSON
    value into the field's value and raises ``ValueError`` when it cannot;
    ``convert_default(text)`` does the same for the field's string ``default``.
    """


@hookspec
@registry("filter_operators")
def clusterpulse_register_filter_operators(register: Register) -> None:
    """Register aggregation filter operators (``equals``, ``contains``, ``greaterThan`` ...).

    ``register(name, predicate)``: ``predicate(field_value, filter_value) -> bool``.
    """


@hookspec(firstresult=True)
@called("first result; asked by a plugin compiling expressions (the alerts plugin's AlertRules)")
def clusterpulse_expression_compiler() -> ExpressionCompiler | None:
    """Return the compiler of the MetricSource expression language, for other plugins to reuse.

    The first plugin that answers wins (the ``metricsource`` plugin provides it). The
    returned callable is ``compile(text, functions)``: ``functions`` maps function names to
    contributions (``plugins.contributions.functions``, plus any the caller adds, each with
    ``.impl`` and ``.meta`` holding ``min_args``/``max_args``). It returns a
    :class:`CompiledExpression` (``.references``, ``.evaluate(values)``) and raises an
    exception with an integer ``position`` attribute (0-based character offset, or ``None``)
    for a syntax error, an unknown function or a wrong number of arguments.
    """


@hookspec(firstresult=True)
@called("first result; asked by the ingester for every pushed batch carrying a source's resources")
def clusterpulse_aggregate_resources(
    source_id: str, resources: Sequence[CollectedResource]
) -> AggregationResults | None:
    """The aggregations of MetricSource ``source_id`` over these collected resources.

    Implemented by the plugin that owns MetricSources, with the same code its pull collection
    aggregates with; asked by the ingester for every pushed batch that carries a source's
    resources, so ``groupBy`` and every aggregation type reach storage whatever the agent
    computed (a Go agent sends numeric results only). ``None``: the source is unknown here or
    declares no aggregations; the caller then keeps what the agent sent.
    """
