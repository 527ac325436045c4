"""The registered vocabulary a MetricSource is compiled against.

Expression functions, field types, aggregation functions and filter operators all come from
the core's registry hooks (:class:`clusterpulse_core.contributions.Contributions`), so the
built-ins and a third-party plugin's ``median`` are looked up the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import attrs
from clusterpulse_metricsource.fieldtypes import UNKNOWN_TYPE, FieldType

from clusterpulse_core.contributions import Contribution, Contributions

AggregationFn = Callable[[list[Any], Any], Any]
FilterPredicate = Callable[[Any, str], bool]


@attrs.frozen
class AggregationFunction:
    """A registered aggregation: ``fn(values, spec)``; ``needs_field`` False for ``count``-like ones."""

    name: str
    fn: AggregationFn
    needs_field: bool = True


@attrs.frozen
class Catalog:
    """Name -> implementation for each kind of contribution."""

    functions: Mapping[str, Contribution]
    field_types: Mapping[str, FieldType]
    aggregations: Mapping[str, AggregationFunction]
    filter_operators: Mapping[str, FilterPredicate]

    @classmethod
    def from_contributions(cls, contributions: Contributions) -> Catalog:
        """Build the catalog from the plugins' registrations."""
        field_types = {
            name: FieldType(name, c.impl, c.meta.get("convert_default") or c.impl)
            for name, c in contributions.field_types.items()
        }
        aggregations = {
            name: AggregationFunction(name, c.impl, bool(c.meta.get("needs_field", True)))
            for name, c in contributions.aggregations.items()
        }
        operators = {name: c.impl for name, c in contributions.filter_operators.items()}
        return cls(dict(contributions.functions), field_types, aggregations, operators)

    def field_type(self, name: str) -> FieldType:
        """The field type ``name``; an unknown name behaves like ``string`` with the default kept."""
        return self.field_types.get(name, UNKNOWN_TYPE)


@cache
def builtin_catalog() -> Catalog:
    """The catalog of this plugin alone (built once; used when no catalog is given)."""
    return catalog_of_plugins({})


def catalog_of_plugins(extra: Mapping[str, object]) -> Catalog:
    """The catalog of this plugin plus ``extra`` plugins (name -> plugin object or class)."""
    from clusterpulse_metricsource.plugin import MetricSourcePlugin

    from clusterpulse_core.plugins import PluginHost

    host = PluginHost([], extra={"metricsource": MetricSourcePlugin, **extra})
    return Catalog.from_contributions(host.contributions)
