"""The shared MetricSource vectors (everything but the expression language) and the utils groups."""

from __future__ import annotations

from typing import Any

import pytest
from clusterpulse_metricsource.aggregator import AggregationPlan, aggregate, passes
from clusterpulse_metricsource.canonical import canonical_json
from clusterpulse_metricsource.catalog import builtin_catalog
from clusterpulse_metricsource.compiled import CompiledAggregation, CompiledFilter
from clusterpulse_metricsource.compiler import SpecError, collection_settings, compile_metric_source, read_spec
from clusterpulse_metricsource.dependencies import CircularDependencyError, evaluation_order
from clusterpulse_metricsource.errors import CompileError, ExtractionError
from clusterpulse_metricsource.fieldtypes import convert_value
from clusterpulse_metricsource.namespaces import (
    NamespaceFilter,
    uses_cluster_wide_list,
    wildcard_match,
    wildcard_regex,
)
from clusterpulse_metricsource.naming import label_selector_text, pluralize, resource_id, split_api_version
from clusterpulse_metricsource.paths import NOT_FOUND, navigate, split_path
from clusterpulse_metricsource.spec import CollectionSpec, LabelSelectorSpec
from clusterpulse_metricsource.status import duration_text, requeue_seconds
from clusterpulse_testing.vectors import decode_value, same_value, vector_test

from clusterpulse_core.serde import structure, unstructure


def _source(spec: dict[str, Any]) -> dict[str, Any]:
    base = {"source": {"apiVersion": "v1", "kind": "Pod"}, "fields": [{"name": "_", "path": ".metadata.name"}]}
    return {"metadata": {"name": "m", "namespace": "ns"}, "spec": {**base, **spec}}


@vector_test("metricsource", "jsonpath")
def test_jsonpath(case: dict[str, Any]) -> None:
    assert list(split_path(case["path"])) == case["segments"]


@vector_test("metricsource", "navigate")
def test_navigate(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(ExtractionError) as raised:
            navigate(case["object"], case["segments"])
        assert str(raised.value) == expect["error"]
        return
    found = navigate(case["object"], case["segments"])
    assert (found is not NOT_FOUND) == expect["found"]
    assert same_value(None if found is NOT_FOUND else found, expect["value"])


@vector_test("metricsource", "convert_value")
def test_convert_value(case: dict[str, Any]) -> None:
    field_type = builtin_catalog().field_type(case["type"])
    value, error = convert_value(field_type, decode_value(case["value"]))
    assert error == case["expect"]["error"]
    assert same_value(value, case["expect"]["value"]), value


@vector_test("metricsource", "convert_default")
def test_convert_default(case: dict[str, Any]) -> None:
    converted = builtin_catalog().field_type(case["type"]).convert_default(case["default"])
    assert same_value(converted, case["expect"]), converted


@vector_test("metricsource", "extract_field")
def test_extract_field(case: dict[str, Any]) -> None:
    program = compile_metric_source(_source({"fields": [case["field"]]}))
    values = program.values(decode_value(case["resource"]))
    assert same_value(values[case["field"]["name"]], case["expect"]), values


@vector_test("metricsource", "pluralize")
def test_pluralize(case: dict[str, Any]) -> None:
    assert pluralize(case["kind"]) == case["resource"]


@vector_test("metricsource", "api_version")
def test_api_version(case: dict[str, Any]) -> None:
    assert split_api_version(case["apiVersion"]) == (case["group"], case["version"])


@vector_test("metricsource", "wildcard")
def test_wildcard(case: dict[str, Any]) -> None:
    assert wildcard_match(case["pattern"], case["input"]) == case["match"]
    assert wildcard_regex(case["pattern"]) == case["regex"]


@vector_test("metricsource", "label_selector")
def test_label_selector(case: dict[str, Any]) -> None:
    # ``selector: null`` is no selector at all: the empty selector text.
    assert label_selector_text(structure(case["selector"], LabelSelectorSpec | None)) == case["expect"]


@vector_test("metricsource", "circular")
def test_circular(case: dict[str, Any]) -> None:
    references = {c["name"]: c["references"] for c in case["computed"]}
    if case["expect_error"]:
        with pytest.raises(CircularDependencyError, match="circular dependency"):
            evaluation_order(references)
    else:
        order = evaluation_order(references)
        assert sorted(order) == sorted(references)
        for name in order:  # every computed reference is evaluated first
            assert all(order.index(ref) < order.index(name) for ref in references[name] if ref in references)


@vector_test("metricsource", "collection_defaults")
def test_collection_defaults(case: dict[str, Any]) -> None:
    settings = collection_settings(structure(case["collection"], CollectionSpec))
    assert same_value(unstructure(settings), case["expect"])


@vector_test("metricsource", "filter")
def test_filter(case: dict[str, Any]) -> None:
    spec = case["filter"]
    compiled = CompiledFilter(spec["field"], spec["operator"], spec["value"]) if spec else None
    predicate = builtin_catalog().filter_operators.get(spec["operator"]) if spec else None
    assert passes(decode_value(case["values"]), compiled, predicate) == case["expect"]


@vector_test("metricsource", "aggregate")
def test_aggregate(case: dict[str, Any]) -> None:
    catalog = builtin_catalog()
    unknown = [(i, agg) for i, agg in enumerate(case["aggregations"]) if agg["function"] not in catalog.aggregations]
    if not unknown:
        plans = compile_metric_source(_source({"aggregations": case["aggregations"]})).aggregations
    else:
        # Compiling refuses a function no plugin registered (an Error naming the field, like an
        # unknown expression function); the evaluation of one still gives null as upstream's
        # did, which is what such a case checks: bind the plans by hand.
        with pytest.raises(SpecError) as caught:
            compile_metric_source(_source({"aggregations": case["aggregations"]}))
        assert caught.value.field == f"spec.aggregations[{unknown[0][0]}].function"
        plans = tuple(AggregationPlan.bind(_compiled_aggregation(agg), catalog) for agg in case["aggregations"])
    results = aggregate(decode_value(case["resources"]), plans)
    assert same_value(results, case["expect"]), results


def _compiled_aggregation(agg: dict[str, Any]) -> CompiledAggregation:
    flt = agg.get("filter")
    return CompiledAggregation(
        name=agg["name"],
        field=agg.get("field") or "",
        function=agg["function"],
        filter=CompiledFilter(flt["field"], flt["operator"], flt["value"]) if flt else None,
        group_by=agg.get("groupBy") or "",
        percentile=agg.get("percentile") or 0,
    )


@vector_test("metricsource", "namespace_filter")
def test_namespace_filter(case: dict[str, Any]) -> None:
    selector = NamespaceFilter.from_patterns(case["include"], case["exclude"])
    assert selector.select(case["namespaces"]) == case["expect"]


@vector_test("metricsource", "cluster_wide_list")
def test_cluster_wide_list(case: dict[str, Any]) -> None:
    namespaces = case["namespaces"]
    if namespaces is None:
        assert uses_cluster_wide_list(None, None, False) == case["expect"]
    else:
        got = uses_cluster_wide_list(namespaces.get("include"), namespaces.get("exclude"), True)
        assert got == case["expect"]


@vector_test("metricsource", "resource_id")
def test_resource_id(case: dict[str, Any]) -> None:
    assert resource_id(case["namespace"], case["name"]) == case["expect"]


@vector_test("metricsource", "compile")
def test_compile(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if "compiled" not in expect:
        with pytest.raises(CompileError) as raised:
            compile_metric_source(case["metricsource"])
        if "error" in expect:
            assert str(raised.value) == expect["error"]
        else:
            assert expect["compile_error_contains"].lower() in str(raised.value).lower()
        return
    program = compile_metric_source(case["metricsource"])
    compiled = unstructure(program.compiled)
    assert compiled.pop("compiledAt").endswith("Z")
    assert same_value(compiled, expect["compiled"]), compiled
    assert program.compiled.hash == expect["hash"]
    assert canonical_json(read_spec(case["metricsource"]["spec"])) == expect["canonical_spec_json"]


@vector_test("utils", "metricsource_requeue_seconds")
def test_requeue_seconds(case: dict[str, Any]) -> None:
    assert same_value(requeue_seconds(case["interval_seconds"], case["errors"]), case["out"])


@vector_test("utils", "go_duration_text_ms_rounded")
def test_duration_text(case: dict[str, Any]) -> None:
    assert duration_text(case["seconds"]) == case["out"]


def test_spec_errors_name_the_field() -> None:
    with pytest.raises(SpecError) as raised:
        compile_metric_source(
            _source({"computed": [{"name": "a", "expression": "1"}, {"name": "b", "expression": "foo(1)"}]})
        )
    assert raised.value.field == "spec.computed[1].expression"
    assert "foo" in raised.value.located
