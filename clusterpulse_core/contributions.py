"""Named contributions from the registry hooks (functions, aggregations, field types, filters, alert rules)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs


class DuplicateContributionError(Exception):
    """Two registrations of one name; the message names both plugins."""


@attrs.frozen
class Contribution:
    """One registered implementation, with the plugin that registered it."""

    name: str
    impl: Any
    plugin: str
    meta: Mapping[str, Any] = attrs.field(factory=dict)


class ContributionTable(Mapping[str, Contribution]):
    """Name -> contribution for one registry hook (read-only once built)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Contribution] = {}

    def add(self, contribution: Contribution) -> None:
        """Add one registration; a name registered twice is an error naming both plugins."""
        existing = self._items.get(contribution.name)
        if existing is not None:
            raise DuplicateContributionError(
                f"{self.kind[:-1].replace('_', ' ')} {contribution.name!r} is registered by both "
                f"plugin {existing.plugin!r} and plugin {contribution.plugin!r}"
            )
        self._items[contribution.name] = contribution

    def __getitem__(self, name: str) -> Contribution:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Contributions:
    """Every contribution table, filled at start-up from the registry hooks.

    The core declares one registry hook (``clusterpulse_register_functions``, the table
    ``functions``); a plugin declares more with :func:`clusterpulse_core.hookspecs.registry`
    (the MetricSource plugin: ``aggregations``, ``field_types``, ``filter_operators``; the alerts
    plugin: ``alert_rules``). A table is read by name, as an attribute or with :meth:`table`; a
    table no loaded plugin declares is empty.
    """

    def __init__(self) -> None:
        self._tables: dict[str, ContributionTable] = {}

    @property
    def functions(self) -> ContributionTable:
        """The expression functions (``clusterpulse_register_functions``)."""
        return self.table("functions")

    @property
    def kinds(self) -> list[str]:
        """The names of the tables that have contributions, sorted."""
        return sorted(name for name, table in self._tables.items() if table)

    def table(self, kind: str) -> ContributionTable:
        """The table named ``kind`` (``functions``, ``aggregations``...); empty when nothing fills it."""
        table = self._tables.get(kind)
        if table is None:
            table = self._tables[kind] = ContributionTable(kind)
        return table

    def __getattr__(self, kind: str) -> ContributionTable:
        if kind.startswith("_"):
            raise AttributeError(kind)
        return self.table(kind)
