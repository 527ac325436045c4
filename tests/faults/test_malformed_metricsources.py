"""Malformed MetricSources, as data: each case is a spec change and the field its error must name.

The MetricSource part of the malformed-CR corpus (test_malformed_crs.py holds the ClusterConnection
part). Every case is applied to a MetricSource that collected successfully first from an emulated
cluster: the reconcile must not raise, the status must be ``phase: Error`` naming the field, the
compiled definition stored by the last good reconcile stays in Redis, and the good spec is
``Active`` again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_metricsource.crd import METRIC_SOURCE
from fault_support import HUB_NAMESPACE, TOKEN, add_cluster, corpus_object, make_hub, managed_objects
from malformed_corpus import Case, Corpus, api_server_verdict, check_malformed, crd_hub_fixture

from clusterpulse_core.context import Runtime
from clusterpulse_core.runtime.bootstrap import reconcile_object

GOOD: dict[str, Any] = {
    "source": {"apiVersion": "v1", "kind": "ConfigMap", "scope": "Namespaced"},
    "fields": [{"name": "name", "path": ".metadata.name", "type": "string"}],
    "aggregations": [{"name": "count", "function": "count"}],
    "collection": {"intervalSeconds": 60},
}
SOURCE = GOOD["source"]

CORPUS = Corpus(METRIC_SOURCE, "metricsource", "maps", GOOD)

METRIC_SOURCE_CASES: list[Case] = [
    ("apiVersion not a string", {"source": {**SOURCE, "apiVersion": 1}}, "spec.source.apiVersion"),
    ("huge kind", {"source": {**SOURCE, "kind": "K" * 100_000}}, "spec.source.kind"),
    ("source not an object", {"source": "v1/ConfigMap"}, "spec.source"),
    (
        "namespaces include not a list",
        {"source": {**SOURCE, "namespaces": {"include": "a*"}}},
        "spec.source.namespaces.include",
    ),
    (
        "matchLabels value not a string",
        {"source": {**SOURCE, "labelSelector": {"matchLabels": {"a": 1}}}},
        "spec.source.labelSelector.matchLabels.a",
    ),
    ("fields not a list", {"fields": "name"}, "spec.fields"),
    ("field name not a string", {"fields": [{"name": 3, "path": ".a"}]}, "spec.fields[0].name"),
    ("huge field path", {"fields": [{"name": "a", "path": "." + "a" * 100_000}]}, "spec.fields[0].path"),
    ("too many fields", {"fields": [{"name": f"a{i}", "path": ".a"} for i in range(300)]}, "spec.fields"),
    (
        "field default a number",
        {"fields": [{"name": "a", "path": ".a", "type": "integer", "default": 3}]},
        "spec.fields[0].default",
    ),
    ("empty field name", {"fields": [{"name": "", "path": ".a"}]}, "spec.fields[0].name"),
    ("computed expression not a string", {"computed": [{"name": "c", "expression": 1}]}, "spec.computed[0].expression"),
    (
        "computed expression broken",
        {"computed": [{"name": "c", "expression": "name +"}]},
        "spec.computed[0].expression",
    ),
    (
        "aggregation function nope",
        {"aggregations": [{"name": "x", "function": "nope"}]},
        "spec.aggregations[0].function",
    ),
    (
        "percentile 500",
        {"aggregations": [{"name": "x", "function": "percentile", "field": "name", "percentile": 500}]},
        "spec.aggregations[0].percentile",
    ),
    (
        "percentile a string",
        {"aggregations": [{"name": "x", "function": "percentile", "field": "name", "percentile": "90"}]},
        "spec.aggregations[0].percentile",
    ),
    (
        "filter not an object",
        {"aggregations": [{"name": "x", "function": "count", "filter": "a=b"}]},
        "spec.aggregations[0].filter",
    ),
    ("interval negative", {"collection": {"intervalSeconds": -5}}, "spec.collection.intervalSeconds"),
    ("interval huge", {"collection": {"intervalSeconds": 10**12}}, "spec.collection.intervalSeconds"),
    ("interval a string", {"collection": {"intervalSeconds": "60"}}, "spec.collection.intervalSeconds"),
    ("interval a float", {"collection": {"intervalSeconds": 60.5}}, "spec.collection.intervalSeconds"),
    ("timeout negative", {"collection": {"timeoutSeconds": -1}}, "spec.collection.timeoutSeconds"),
    ("maxResources huge", {"collection": {"maxResources": 2**31 - 1}}, "spec.collection.maxResources"),
    ("parallelism negative", {"collection": {"parallelism": -3}}, "spec.collection.parallelism"),
    ("retryAttempts huge", {"collection": {"retryAttempts": 1000}}, "spec.collection.retryAttempts"),
    ("batchSize a boolean", {"collection": {"batchSize": True}}, "spec.collection.batchSize"),
    (
        "filterAggregations a string",
        {"rbac": {"resourceTypeName": "cm", "filterAggregations": "yes"}},
        "spec.rbac.filterAggregations",
    ),
    (
        "filterableFields not a list",
        {"rbac": {"resourceTypeName": "cm", "filterableFields": "name"}},
        "spec.rbac.filterableFields",
    ),
    ("spec not an object", {"__spec__": "nope"}, "spec"),
]


IDS = [case[0] for case in METRIC_SOURCE_CASES]


@pytest.fixture
def collected(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Iterator[Any]:
    hub = make_hub(kube_api, METRIC_SOURCE)
    cluster = kube_api(objects=managed_objects("node-a"), require_token=TOKEN)
    add_cluster(hub, "east", cluster.url)

    def connect(runtime: Runtime) -> None:
        owner, kind = runtime.plugins.kinds["ClusterConnection"]
        assert reconcile_object(runtime, owner, kind, hub.get(kind.api_version, kind.plural, "east", HUB_NAMESPACE)).ok

    with corpus_object(CORPUS, hub, redis_url, tmp_path, ("redis", "cluster", "metricsource"), connect) as running:
        yield running


crd_hub = crd_hub_fixture(METRIC_SOURCE)


@pytest.mark.parametrize("case", METRIC_SOURCE_CASES, ids=IDS)
def test_a_malformed_metric_source_is_an_error_naming_its_field(collected: Any, case: Case) -> None:
    reconcile, client = collected
    check_malformed(CORPUS, reconcile, case, lambda: client.get(f"metricsource:{HUB_NAMESPACE}:maps"))


@pytest.mark.parametrize("case", METRIC_SOURCE_CASES, ids=IDS)
def test_the_api_server_refuses_what_the_crd_schema_can(crd_hub: Any, case: Case) -> None:
    api_server_verdict(crd_hub, CORPUS, case)
