"""The MetricSource ``spec`` as attrs classes (docs/compatibility.md#crds, docs/compatibility.md#metricsource-wire).

Attribute order and omit-empty rules follow the upstream spec exactly (docs/compatibility.md#metricsource-wire),
because the canonical
JSON of the spec (its serialisation through :mod:`clusterpulse_core.serde`) is what the spec
hash is computed over. Every field has a default so that a partial object structures; the
compiler reports what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from clusterpulse_core.serde import wire


def _sorted_labels(value: Mapping[str, str] | None) -> dict[str, str]:
    return {key: value[key] for key in sorted(value)} if value else {}


@wire(case="camel", omit_empty=("include", "exclude"))
@attrs.frozen
class NamespaceSelectorSpec:
    """``source.namespaces``: wildcard patterns of namespaces to include and exclude."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@wire(case="camel", omit_empty=("values",))
@attrs.frozen
class MatchExpressionSpec:
    """One ``matchExpressions`` entry of a label selector."""

    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


@wire(case="camel", omit_empty=("match_labels", "match_expressions"))
@attrs.frozen
class LabelSelectorSpec:
    """A Kubernetes label selector (``matchLabels`` kept in sorted key order)."""

    match_labels: dict[str, str] = attrs.field(factory=dict, converter=_sorted_labels)
    match_expressions: tuple[MatchExpressionSpec, ...] = ()


@wire(case="camel", omit_empty=("scope", "namespaces", "label_selector"))
@attrs.frozen
class SourceSpec:
    """``spec.source``: which resource type to list, where, and with which labels."""

    api_version: str = ""
    kind: str = ""
    scope: str = ""
    namespaces: NamespaceSelectorSpec | None = None
    label_selector: LabelSelectorSpec | None = None


@wire(case="camel", omit_empty=("type", "default"))
@attrs.frozen
class FieldSpec:
    """One field extraction: a name, a path into the object, a type and an optional default."""

    name: str = ""
    path: str = ""
    type: str = ""
    default: str | None = None


@wire(case="camel", omit_empty=("type",))
@attrs.frozen
class ComputedSpec:
    """A computed field: an expression over the extracted (and other computed) fields."""

    name: str = ""
    expression: str = ""
    type: str = ""


@wire(case="camel")
@attrs.frozen
class FilterSpec:
    """An aggregation filter: which resources take part."""

    field: str = ""
    operator: str = ""
    value: str = ""


@wire(case="camel", omit_empty=("field", "filter", "group_by", "percentile"))
@attrs.frozen
class AggregationSpec:
    """One aggregation over the collected resources of a cluster."""

    name: str = ""
    field: str = ""
    function: str = ""
    filter: FilterSpec | None = None
    group_by: str = ""
    percentile: int | None = None


@wire(
    case="camel",
    omit_empty=("interval_seconds", "timeout_seconds", "max_resources", "batch_size", "retry_attempts", "parallelism"),
)
@attrs.frozen
class CollectionSpec:
    """``spec.collection`` as written (0 = unset; the compiler applies defaults).

    ``retry_attempts`` is ``None`` when absent: an explicit 0 means no retries.
    """

    interval_seconds: int = 0
    timeout_seconds: int = 0
    max_resources: int = 0
    batch_size: int = 0
    retry_attempts: int | None = None
    parallelism: int = 0


@wire(case="camel", omit_empty=("filterable_fields", "filter_aggregations"))
@attrs.frozen
class RbacSpec:
    """``spec.rbac``: how access policies see this source."""

    resource_type_name: str = ""
    filterable_fields: tuple[str, ...] = ()
    filter_aggregations: bool = False


@wire(case="camel", omit_empty=("computed", "aggregations"))
@attrs.frozen
class MetricSourceSpec:
    """The whole ``spec`` of a MetricSource (``fields`` is ``None`` when absent)."""

    source: SourceSpec = attrs.field(factory=SourceSpec)
    fields: tuple[FieldSpec, ...] | None = None
    computed: tuple[ComputedSpec, ...] = ()
    aggregations: tuple[AggregationSpec, ...] = ()
    collection: CollectionSpec = attrs.field(factory=CollectionSpec)
    rbac: RbacSpec = attrs.field(factory=RbacSpec)
