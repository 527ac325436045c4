"""The compiled MetricSource as stored and sent to agents (docs/compatibility.md#metricsource-wire,
docs/compatibility.md#metricsource-wire).

Only the wire form lives here; the executable parts (compiled expressions, namespace regexes,
converters) are in :class:`clusterpulse_metricsource.program.Program`, because readers of the
stored JSON rebuild those themselves.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.serde import wire


@wire(case="camel", omit_empty=("include", "exclude"))
@attrs.frozen
class CompiledNamespaces:
    """Namespace include/exclude wildcard patterns as written in the spec."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@wire(case="camel", omit_empty=("label_selector", "namespaces"))
@attrs.frozen
class CompiledSource:
    """What to list: API group/version/resource, scope, selector string and namespaces."""

    api_version: str
    kind: str
    scope: str
    group: str
    version: str
    resource: str
    label_selector: str = ""
    namespaces: CompiledNamespaces | None = None


@wire(case="camel", omit_empty=("default",))
@attrs.frozen
class CompiledField:
    """An extracted field: path split into segments (``None`` for an empty path), type, default."""

    name: str
    path: str
    path_segments: tuple[str, ...] | None
    type: str
    default: str | None = None
    index: int = 0


@wire(case="camel")
@attrs.frozen
class CompiledComputed:
    """A computed field as written (expression source text) with its result type."""

    name: str
    expression: str
    type: str


@wire(case="camel")
@attrs.frozen
class CompiledFilter:
    """An aggregation filter."""

    field: str
    operator: str
    value: str


@wire(case="camel", omit_empty=("field", "filter", "group_by", "percentile"))
@attrs.frozen
class CompiledAggregation:
    """An aggregation as compiled: the ``spec`` an aggregation function receives.

    ``name`` is the result's name, ``field`` the aggregated field (``""`` for none),
    ``function`` the registered function's name, ``filter`` the optional filter,
    ``group_by`` the grouping field (``""`` for none) and ``percentile`` 0..100 (0 when
    unset, and then omitted from the stored definition).
    """

    name: str
    field: str = ""
    function: str = ""
    filter: CompiledFilter | None = None
    group_by: str = ""
    percentile: int = 0


@wire(case="camel")
@attrs.frozen
class CompiledCollection:
    """Collection settings after the compiler's defaults."""

    interval_seconds: int = 60
    timeout_seconds: int = 30
    max_resources: int = 5000
    batch_size: int = 500
    retry_attempts: int = 3
    parallelism: int = 3


@wire(case="camel", omit_empty=("filterable_fields",))
@attrs.frozen
class CompiledRbac:
    """RBAC hints for the API: the resource type name and what may be filtered."""

    resource_type_name: str = ""
    filterable_fields: tuple[str, ...] = ()
    filter_aggregations: bool = False


@wire(case="camel", time="seconds", omit_empty=("computed", "aggregations"))
@attrs.frozen
class CompiledMetricSource:
    """The compiled definition stored as ``metricsource:<ns>:<name>``."""

    name: str
    namespace: str
    source: CompiledSource
    fields: tuple[CompiledField, ...]
    computed: tuple[CompiledComputed, ...] = ()
    aggregations: tuple[CompiledAggregation, ...] = ()
    collection: CompiledCollection = attrs.field(factory=CompiledCollection)
    rbac: CompiledRbac = attrs.field(factory=CompiledRbac)
    compiled_at: datetime = ZERO_TIME
    hash: str = ""

    @property
    def source_id(self) -> str:
        """``<namespace>/<name>``."""
        return f"{self.namespace}/{self.name}"
