"""A third-party plugin's aggregation (``median``) and filter operator used by a MetricSource."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import pytest
from clusterpulse_cluster.plugin import ClusterPlugin
from clusterpulse_metricsource.catalog import catalog_of_plugins
from clusterpulse_metricsource.compiler import SpecError, compile_metric_source
from clusterpulse_metricsource.plugin import MetricSourcePlugin
from clusterpulse_model.pieces import AggregationsPiece
from clusterpulse_testing.recording import BackendPlugin

from clusterpulse_core import hookimpl
from clusterpulse_core.hookspecs import Register
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime

from .conftest import CUSTOM_API_VERSION, Fleet


class MedianPlugin:
    """What a third-party package would ship: one aggregation and one filter operator."""

    @hookimpl
    def clusterpulse_register_aggregations(self, register: Register) -> None:
        """``median`` of the numeric values."""
        register("median", median)

    @hookimpl
    def clusterpulse_register_filter_operators(self, register: Register) -> None:
        """``oddLength``: the field's text has an odd number of characters (the value is ignored)."""
        register("oddLength", lambda field, value: len(str(field)) % 2 == 1)


def median(values: Sequence[Any], spec: Any) -> float | None:
    numbers = [float(v) for v in values if type(v) in (int, float)]
    return statistics.median(numbers) if numbers else None


SPEC = {
    "source": {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus"},
    "fields": [{"name": "arms", "path": ".spec.arms", "type": "integer"}, {"name": "name", "path": ".metadata.name"}],
    "aggregations": [
        {"name": "medianArms", "field": "arms", "function": "median"},
        {"name": "oddNames", "function": "count", "filter": {"field": "name", "operator": "oddLength", "value": ""}},
    ],
}


def test_plugin_median_is_used_in_a_reconcile(fleet: Fleet) -> None:
    host = PluginHost(
        [],
        extra={
            "cluster": ClusterPlugin,
            "metricsource": MetricSourcePlugin,
            "median": MedianPlugin,
            "recording": BackendPlugin(fleet.backend),
        },
    )
    fleet.runtime = build_runtime(fleet.runtime.config, host, hub=fleet.runtime.hub)
    assert host.contributions.aggregations["median"].plugin == "median"
    fleet.apply("median", SPEC)
    assert fleet.reconcile("median").ok
    results = {p.cluster: p.results.values for p in fleet.backend.of(AggregationsPiece)}
    # east arms 3, 0, 5, 1 -> 2.0; names saguaro(7) barrel(6) cholla(6) agave(5) -> 2 odd
    assert results["east"] == {"medianArms": 2.0, "oddNames": 2.0}
    assert results["west"] == {"medianArms": 4.5, "oddNames": 2.0}  # prickly, opuntia


def test_without_the_plugin_median_is_a_compile_error_naming_the_field() -> None:
    obj = {"metadata": {"name": "m", "namespace": "ns"}, "spec": SPEC}
    records = [{"metadata": {"name": "abc"}, "spec": {"arms": 2}}, {"metadata": {"name": "ab"}, "spec": {"arms": 4}}]
    with_plugin = compile_metric_source(obj, catalog_of_plugins({"median": MedianPlugin}))
    assert with_plugin.aggregate(with_plugin.records(records)) == {"medianArms": 3.0, "oddNames": 1.0}
    with pytest.raises(SpecError) as caught:
        compile_metric_source(obj)
    assert caught.value.field == "spec.aggregations[0].function"
    assert caught.value.detail == (
        "unknown aggregation function 'median' (did you mean 'min'? registered: avg, "
        "count, distinct, max, min, percentile, sum)"
    )
