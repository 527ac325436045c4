"""Compiling a MetricSource object into a :class:`~clusterpulse_metricsource.program.Program`
(docs/compatibility.md#metricsource-wire).

Steps, the first failure ending compilation: read the spec, validate (docs/compatibility.md#metricsource-wire),
resolve the
source (docs/compatibility.md#metricsource-wire), split the field paths (docs/compatibility.md#metricsource-wire),
compile the computed expressions and order
them by dependency (M5, M6), check the aggregations (M10), compile the namespace patterns
(docs/compatibility.md#metricsource-wire), apply the collection defaults (docs/compatibility.md#metricsource-wire,
M13) and hash the canonical spec (docs/compatibility.md#metricsource-wire).

Every failure is a :class:`SpecError` (a :class:`~clusterpulse_metricsource.errors.CompileError`)
whose message is upstream's and whose ``field`` names the offending spec field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
import cattrs
from clusterpulse_metricsource.aggregator import AggregationPlan
from clusterpulse_metricsource.canonical import canonical_json, spec_hash
from clusterpulse_metricsource.catalog import Catalog, builtin_catalog
from clusterpulse_metricsource.compiled import (
    CompiledAggregation,
    CompiledCollection,
    CompiledComputed,
    CompiledField,
    CompiledFilter,
    CompiledMetricSource,
    CompiledNamespaces,
    CompiledRbac,
    CompiledSource,
)
from clusterpulse_metricsource.dependencies import CircularDependencyError, evaluation_order
from clusterpulse_metricsource.errors import CompileError, ExpressionError, MetricSourceError
from clusterpulse_metricsource.expr import compile_expression
from clusterpulse_metricsource.extractor import FieldExtractor, converted_default
from clusterpulse_metricsource.namespaces import NamespaceFilter
from clusterpulse_metricsource.naming import (
    api_version_problem,
    kind_problem,
    label_selector_text,
    pluralize,
    split_api_version,
)
from clusterpulse_metricsource.paths import compile_steps, split_path
from clusterpulse_metricsource.program import ComputedStep, Program
from clusterpulse_metricsource.spec import CollectionSpec, MetricSourceSpec
from clusterpulse_metricsource.speccheck import RawSpecError, check_raw_spec

from clusterpulse_core.config import did_you_mean
from clusterpulse_core.serde import camel, structure
from clusterpulse_core.wildcard import PatternError, check_pattern

#: ``discover(group, version, kind)``: the resource plural from API discovery, or None.
Discover = Callable[[str, str, str], "str | None"]

_INT32 = (-(2**31), 2**31 - 1)
_COMPUTED_PREFIX = "failed to compile computed fields: "


class SpecError(CompileError):
    """A compile failure; ``field`` is the spec path (``spec.computed[1].expression``), ``detail`` the cause."""

    def __init__(self, message: str, field: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.detail = detail or message

    @property
    def located(self) -> str:
        """``<field>: <detail>`` for showing against the YAML, or the message when no field is known."""
        return f"{self.field}: {self.detail}" if self.field else str(self)


def _validation(detail: str, field: str) -> SpecError:
    return SpecError(f"validation failed: {detail}", field, detail)


def read_spec(raw: Any) -> MetricSourceSpec:
    """Structure a raw ``spec`` mapping; a wrong shape or type is a :class:`SpecError` naming the field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise SpecError(f"spec: expected an object, got {type(raw).__name__}", "spec", "expected an object")
    try:
        check_raw_spec(raw)
    except RawSpecError as exc:
        raise SpecError(str(exc), exc.field, exc.problem) from exc
    try:
        spec = structure(dict(raw), MetricSourceSpec)
    except Exception as exc:
        problems = _structure_problems(exc)
        raise SpecError(f"invalid spec: {problems[0][1]} ({problems[0][0]})", *problems[0]) from exc
    for key in ("interval_seconds", "timeout_seconds", "max_resources", "batch_size", "retry_attempts", "parallelism"):
        value = getattr(spec.collection, key)
        if value is not None and not _INT32[0] <= value <= _INT32[1]:
            field = f"spec.collection.{camel(key)}"
            raise SpecError(f"invalid spec: {field} must be a 32-bit integer", field, "must be a 32-bit integer")
    return spec


def _structure_problems(exc: Exception) -> list[tuple[str, str]]:
    """(field path, message) of each structuring failure, paths in wire (camelCase) form."""
    if isinstance(exc, cattrs.BaseValidationError):
        found = []
        for line in cattrs.transform_error(exc, path="spec"):
            message, _, path = line.rpartition(" @ ")
            found.append((".".join(camel(part) for part in path.split(".")), message or line))
        if found:
            return found
    return [("spec", f"{type(exc).__name__}: {exc}")]


def collection_settings(collection: CollectionSpec) -> CompiledCollection:
    """The compiler's collection defaults (docs/compatibility.md#metricsource-wire): positive values override.

    ``retryAttempts`` is 3 when absent or negative (M13); an explicit 0 stays 0 (docs/compatibility.md#crds).
    """
    defaults = CompiledCollection()

    def pick(given: int, default: int) -> int:
        return given if given > 0 else default

    retries = collection.retry_attempts

    return CompiledCollection(
        interval_seconds=pick(collection.interval_seconds, defaults.interval_seconds),
        timeout_seconds=pick(collection.timeout_seconds, defaults.timeout_seconds),
        max_resources=pick(collection.max_resources, defaults.max_resources),
        batch_size=pick(collection.batch_size, defaults.batch_size),
        retry_attempts=retries if retries is not None and retries >= 0 else defaults.retry_attempts,
        parallelism=pick(collection.parallelism, defaults.parallelism),
    )


def _as_go_hashes(spec: MetricSourceSpec) -> MetricSourceSpec:
    """The spec as Go's int32 ``omitempty`` serialises it: an explicit ``retryAttempts: 0`` is omitted."""
    if spec.collection.retry_attempts != 0:
        return spec
    return attrs.evolve(spec, collection=attrs.evolve(spec.collection, retry_attempts=None))


def check_namespace_patterns(include: Sequence[str] | None, exclude: Sequence[str] | None) -> None:
    """Every include/exclude pattern within the length cap (docs/security.md#patterns), else a
    :class:`SpecError` naming the pattern's field."""
    for key, patterns in (("include", include), ("exclude", exclude)):
        for i, pattern in enumerate(patterns or ()):
            try:
                check_pattern(pattern)
            except PatternError as exc:
                raise _validation(f"namespace pattern {key}[{i}]: {exc}", f"spec.source.namespaces.{key}[{i}]") from exc


def validate(spec: MetricSourceSpec) -> None:
    """The structural checks of docs/compatibility.md#metricsource-wire, in order (computed duplicates reported as
    such, M6)."""
    if spec.source.api_version == "":
        raise _validation("source.apiVersion is required", "spec.source.apiVersion")
    if spec.source.kind == "":
        raise _validation("source.kind is required", "spec.source.kind")
    for problem, where in (
        (api_version_problem(spec.source.api_version), "spec.source.apiVersion"),
        (kind_problem(spec.source.kind), "spec.source.kind"),
    ):
        if problem:
            raise _validation(problem, where)
    if not spec.fields:
        raise _validation("at least one field extraction is required", "spec.fields")
    seen: set[str] = set()
    for i, field in enumerate(spec.fields):
        if field.name == "":
            raise _validation("field name cannot be empty", f"spec.fields[{i}].name")
        if field.path == "":
            raise _validation(f"field {field.name}: path cannot be empty", f"spec.fields[{i}].path")
        if field.name in seen:
            raise _validation(f"duplicate field name: {field.name}", f"spec.fields[{i}].name")
        seen.add(field.name)
    if spec.source.namespaces is not None:
        check_namespace_patterns(spec.source.namespaces.include, spec.source.namespaces.exclude)
    computed_seen: set[str] = set()
    for i, computed in enumerate(spec.computed):
        where = f"spec.computed[{i}].name"
        if computed.name == "":
            raise _validation("computed field name cannot be empty", where)
        if computed.name in seen:
            raise _validation(f"computed field name conflicts with extracted field: {computed.name}", where)
        if computed.name in computed_seen:
            raise _validation(f"duplicate computed field name: {computed.name}", where)
        computed_seen.add(computed.name)


def compile_source(spec: MetricSourceSpec, discover: Discover | None = None) -> CompiledSource:
    """The list target: scope, group/version, resource (discovery, else the pluraliser), selector."""
    source = spec.source
    group, version = split_api_version(source.api_version)
    resource = None
    if discover is not None:
        try:
            resource = discover(group, version, source.kind)
        except Exception:  # discovery is an optimisation; the pluraliser is the documented fallback
            resource = None
    namespaces = None
    if source.namespaces is not None:
        namespaces = CompiledNamespaces(source.namespaces.include, source.namespaces.exclude)
    return CompiledSource(
        api_version=source.api_version,
        kind=source.kind,
        scope=source.scope or "Namespaced",
        group=group,
        version=version,
        resource=resource or pluralize(source.kind),
        label_selector=label_selector_text(source.label_selector),
        namespaces=namespaces,
    )


def _compile_computed(spec: MetricSourceSpec, catalog: Catalog) -> tuple[ComputedStep, ...]:
    """Compile every expression, check references (M5, M6) and order by dependency."""
    return _computed_steps([f.name for f in spec.fields or ()], spec.computed, catalog)


def _computed_steps(fields: Sequence[str], computed_specs: Sequence[Any], catalog: Catalog) -> tuple[ComputedStep, ...]:
    """Computed steps from extracted field names and ``(name, expression, type)`` specs."""
    field_names = set(fields)
    computed_names = {c.name for c in computed_specs}
    compiled: dict[str, Any] = {}
    references: dict[str, list[str]] = {}
    for i, computed in enumerate(computed_specs):
        where = f"spec.computed[{i}].expression"
        try:
            expression = compile_expression(computed.expression, catalog.functions)
        except MetricSourceError as exc:
            # Upstream's message has no position; the located form (CLI) keeps it (M4).
            message = exc.message if isinstance(exc, ExpressionError) else str(exc)
            raise SpecError(
                f"{_COMPUTED_PREFIX}invalid expression for computed field '{computed.name}': {message}", where, str(exc)
            ) from exc
        refs = list(expression.references)
        for ref in refs:
            if ref not in field_names and ref not in computed_names:
                detail = f"computed field '{computed.name}' references unknown field '{ref}'"
                raise SpecError(_COMPUTED_PREFIX + detail, where, f"unknown field '{ref}'")
        compiled[computed.name] = expression
        references[computed.name] = refs
    try:
        order = evaluation_order(references)
    except CircularDependencyError as exc:
        index = next(i for i, c in enumerate(computed_specs) if c.name == exc.cycle[0])
        raise SpecError(_COMPUTED_PREFIX + str(exc), f"spec.computed[{index}].expression", str(exc)) from exc
    types = {c.name: c.type or "float" for c in computed_specs}
    return tuple(ComputedStep(name, compiled[name], types[name]) for name in order)


def _compile_aggregations(spec: MetricSourceSpec, catalog: Catalog) -> tuple[CompiledAggregation, ...]:
    """Copy the aggregations; a percentile outside 0..100 is an error (M10), and so is a function
    no plugin registered (like an unknown expression function; upstream let it yield null)."""
    out = []
    for i, agg in enumerate(spec.aggregations):
        if agg.function not in catalog.aggregations:
            known = sorted(catalog.aggregations)
            detail = (
                f"unknown aggregation function '{agg.function}' ({did_you_mean(agg.function, known)}"
                f"registered: {', '.join(known)})"
            )
            raise SpecError(f"aggregation '{agg.name}': {detail}", f"spec.aggregations[{i}].function", detail)
        if agg.function == "percentile" and agg.percentile is not None and not 0 <= agg.percentile <= 100:
            detail = f"percentile must be between 0 and 100, got {agg.percentile}"
            raise SpecError(f"aggregation '{agg.name}': {detail}", f"spec.aggregations[{i}].percentile", detail)
        filter_spec = None
        if agg.filter is not None:
            filter_spec = CompiledFilter(agg.filter.field, agg.filter.operator, agg.filter.value)
        out.append(
            CompiledAggregation(
                name=agg.name,
                field=agg.field,
                function=agg.function,
                filter=filter_spec,
                group_by=agg.group_by,
                percentile=agg.percentile or 0,
            )
        )
    return tuple(out)


def compile_metric_source(
    obj: Mapping[str, Any],
    catalog: Catalog | None = None,
    now: datetime | None = None,
    discover: Discover | None = None,
) -> Program:
    """Compile a MetricSource object (``{metadata: {name, namespace}, spec}``) into a Program.

    Raises :class:`SpecError` (a :class:`CompileError`) for anything invalid; never another type.
    """
    try:
        return _compile(obj, catalog or builtin_catalog(), now, discover)
    except MetricSourceError:
        raise
    except Exception as exc:  # a defect must not crash a worker: report it as a compile error
        raise SpecError(f"internal compile error: {type(exc).__name__}: {exc}") from exc


def _compile(obj: Mapping[str, Any], catalog: Catalog, now: datetime | None, discover: Discover | None) -> Program:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    spec = read_spec(obj.get("spec") if isinstance(obj, Mapping) else None)
    validate(spec)
    assert spec.fields is not None
    source = compile_source(spec, discover)

    fields = []
    extractors = []
    for index, field in enumerate(spec.fields):
        segments = split_path(field.path)
        field_type_name = field.type or "string"
        fields.append(
            CompiledField(
                name=field.name,
                path=field.path,
                path_segments=segments or None,
                type=field_type_name,
                default=field.default,
                index=index,
            )
        )
        field_type = catalog.field_type(field_type_name)
        extractors.append(
            FieldExtractor(
                field.name, compile_steps(segments), field_type, converted_default(field_type, field.default)
            )
        )

    computed_steps = _compile_computed(spec, catalog)
    aggregations = _compile_aggregations(spec, catalog)
    namespace_filter = None
    if source.namespaces is not None:
        namespace_filter = NamespaceFilter.from_patterns(source.namespaces.include, source.namespaces.exclude)

    canonical = canonical_json(_as_go_hashes(spec))
    compiled = CompiledMetricSource(
        name=str(metadata.get("name") or ""),
        namespace=str(metadata.get("namespace") or ""),
        source=source,
        fields=tuple(fields),
        computed=tuple(CompiledComputed(c.name, c.expression, c.type or "float") for c in spec.computed),
        aggregations=aggregations,
        collection=collection_settings(spec.collection),
        rbac=CompiledRbac(spec.rbac.resource_type_name, spec.rbac.filterable_fields, spec.rbac.filter_aggregations),
        compiled_at=(now or datetime.now(UTC)).replace(microsecond=0),
        hash=spec_hash(canonical),
    )
    return Program(
        compiled=compiled,
        extractors=tuple(extractors),
        computed=computed_steps,
        aggregations=tuple(AggregationPlan.bind(a, catalog) for a in aggregations),
        namespace_filter=namespace_filter,
    )


def program_from_compiled(compiled: CompiledMetricSource, catalog: Catalog | None = None) -> Program:
    """The Program of an already compiled definition (what a push agent receives, docs/compatibility.md#c6).

    Field extractors, computed expressions (compiled from their source text, checked and put in
    dependency order as at compile time), aggregations and namespace patterns are rebuilt, so an
    agent evaluates exactly what the hub would. Raises :class:`SpecError` for a definition that
    does not compile here (an expression using a function this process does not have).
    """
    catalog = catalog or builtin_catalog()
    try:
        extractors = []
        for field in compiled.fields:
            field_type = catalog.field_type(field.type)
            extractors.append(
                FieldExtractor(
                    field.name,
                    compile_steps(list(field.path_segments or ())),
                    field_type,
                    converted_default(field_type, field.default),
                )
            )
        steps = _computed_steps([f.name for f in compiled.fields], compiled.computed, catalog)
        namespace_filter = None
        if compiled.source.namespaces is not None:
            check_namespace_patterns(compiled.source.namespaces.include, compiled.source.namespaces.exclude)
            namespace_filter = NamespaceFilter.from_patterns(
                compiled.source.namespaces.include, compiled.source.namespaces.exclude
            )
        return Program(
            compiled=compiled,
            extractors=tuple(extractors),
            computed=steps,
            aggregations=tuple(AggregationPlan.bind(a, catalog) for a in compiled.aggregations),
            namespace_filter=namespace_filter,
        )
    except MetricSourceError:
        raise
    except Exception as exc:
        raise SpecError(f"internal compile error: {type(exc).__name__}: {exc}") from exc
