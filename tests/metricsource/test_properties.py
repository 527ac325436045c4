"""Property tests: random specs only ever fail with the plugin's own errors; programs never fail."""

from __future__ import annotations

import json
from typing import Any

from clusterpulse_metricsource.canonical import canonical_json
from clusterpulse_metricsource.compiler import compile_metric_source, read_spec
from clusterpulse_metricsource.errors import MetricSourceError
from clusterpulse_metricsource.paths import split_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
names = st.sampled_from(["a", "b", "c", "cpu", "phase", ""])
paths = st.one_of(
    st.sampled_from([".spec.a", ".status.phase", "a[0].b", ".", "[x]", ".a[1]", "..b"]), st.text(max_size=10)
)
expressions = st.one_of(
    st.sampled_from(
        [
            "a + b",
            "round(a / b, 2)",
            "cpu * 1000",
            "a ?? 'x'",
            "foo(1)",
            "(1 +",
            "b + c",
            "c + a",
            "a == b && !c",
            "concat(phase, '-')",
            "'unterminated",
            "1e3 % 0",
        ]
    ),
    st.text(max_size=12),
)
functions = st.sampled_from(["count", "sum", "avg", "min", "max", "percentile", "distinct", "nope"])
operators = st.sampled_from(["equals", "notEquals", "contains", "in", "matches", "greaterThan", "bogus"])
field_types = st.sampled_from(
    ["string", "integer", "float", "boolean", "quantity", "timestamp", "arrayLength", "weird", ""]
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(strategy, json_values)


defaults = st.one_of(st.none(), st.text(max_size=5))
fields = st.lists(
    st.fixed_dictionaries({"name": names, "path": paths}, optional={"type": field_types, "default": defaults}),
    max_size=4,
)
computed = st.lists(
    st.fixed_dictionaries({"name": names, "expression": expressions}, optional={"type": field_types}), max_size=3
)
aggregations = st.lists(
    st.fixed_dictionaries(
        {"name": names, "function": functions},
        optional={
            "field": names,
            "groupBy": names,
            "percentile": st.integers(-10, 120),
            "filter": st.fixed_dictionaries({"field": names, "operator": operators, "value": st.text(max_size=6)}),
        },
    ),
    max_size=3,
)
specs = st.fixed_dictionaries(
    {},
    optional={
        "source": _maybe(
            st.fixed_dictionaries(
                {
                    "apiVersion": st.sampled_from(["v1", "apps/v1", "", "a/b/c"]),
                    "kind": st.sampled_from(["Pod", "Gateway", ""]),
                },
                optional={
                    "scope": st.sampled_from(["Cluster", "Namespaced", "x"]),
                    "namespaces": json_values,
                    "labelSelector": json_values,
                },
            )
        ),
        "fields": _maybe(fields),
        "computed": _maybe(computed),
        "aggregations": _maybe(aggregations),
        "collection": _maybe(
            st.dictionaries(
                st.sampled_from(["intervalSeconds", "maxResources", "retryAttempts"]),
                st.integers(-(2**33), 2**33),
                max_size=2,
            )
        ),
        "rbac": json_values,
    },
)
# Specs that usually compile, so the run-time half of the property is exercised too.
plausible_specs = st.fixed_dictionaries(
    {
        "source": st.fixed_dictionaries(
            {"apiVersion": st.just("v1"), "kind": st.just("Pod")},
            optional={
                "namespaces": st.fixed_dictionaries(
                    {},
                    optional={
                        "include": st.lists(st.text(max_size=4), max_size=2),
                        "exclude": st.lists(st.text(max_size=4), max_size=2),
                    },
                )
            },
        ),
        "fields": st.lists(st.sampled_from(["a", "b", "cpu", "phase"]), min_size=1, unique=True).flatmap(
            lambda chosen: st.tuples(
                *[
                    st.fixed_dictionaries(
                        {
                            "name": st.just(name),
                            "path": st.sampled_from([".spec.a", ".status.phase", "a[0].b", ".", ".a[1]"]),
                        },
                        optional={"type": field_types, "default": st.text(max_size=5)},
                    )
                    for name in chosen
                ]
            ).map(list)
        ),
        "computed": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(["x", "y"]),
                    "expression": st.sampled_from(
                        [
                            "a + b",
                            "round(cpu / 3, 2)",
                            "a ?? phase",
                            "cpu % 0",
                            "x * 2",
                            "concat(phase, '-')",
                            "a > 1 && b < 2",
                            "toNumber(phase)",
                        ]
                    ),
                },
                optional={"type": field_types},
            ),
            max_size=2,
            unique_by=lambda c: c["name"],
        ),
        "aggregations": aggregations,
    }
)
objects = st.dictionaries(st.sampled_from(["metadata", "spec", "status", "a"]), json_values, max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.one_of(plausible_specs, specs, json_values), resources=st.lists(objects, max_size=4))
def test_random_specs_fail_only_with_plugin_errors(spec: Any, resources: list[Any]) -> None:
    try:
        program = compile_metric_source({"metadata": {"name": "m", "namespace": "n"}, "spec": spec})
    except MetricSourceError:
        return
    # A program that compiled runs over any object without raising, and its output is JSON.
    records = program.records(resources)
    results = program.aggregate(records)
    json.dumps([r.values for r in records] + [results], allow_nan=False)
    assert json.loads(canonical_json(read_spec(spec))) is not None


@given(path=st.text(max_size=20))
def test_split_path_never_yields_empty_segments(path: str) -> None:
    assert all(segment for segment in split_path(path))
