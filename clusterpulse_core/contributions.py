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


@attrs.frozen
class Contributions:
    """Every contribution table, filled at start-up from the registry hooks."""

    functions: ContributionTable = attrs.field(factory=lambda: ContributionTable("functions"))
    aggregations: ContributionTable = attrs.field(factory=lambda: ContributionTable("aggregations"))
    field_types: ContributionTable = attrs.field(factory=lambda: ContributionTable("field_types"))
    filter_operators: ContributionTable = attrs.field(
        factory=lambda: ContributionTable("filter_operators"))
    alert_rules: ContributionTable = attrs.field(factory=lambda: ContributionTable("alert_rules"))

    def table(self, kind: str) -> ContributionTable:
        """The table named ``kind`` (``functions``, ``aggregations``...)."""
        table = getattr(self, kind)
        assert isinstance(table, ContributionTable)
        return table
