"""A plugin function that raises: the value is null, and the failure is logged, counted and in the status."""

from __future__ import annotations

import logging
import statistics
from collections.abc import Iterator
from typing import Any

import pytest
from clusterpulse_cluster.plugin import ClusterPlugin
from clusterpulse_metricsource.plugin import MetricSourcePlugin
from clusterpulse_model.pieces import AggregationsPiece, CustomResourcesPiece
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.hookspecs import Register
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime

from .conftest import CUSTOM_API_VERSION, NAMESPACE, Fleet


class Fragile:
    """A third-party plugin whose functions fail on some inputs."""

    clusterpulse_api_version = 1

    @hookimpl
    def clusterpulse_register_functions(self, register: Register) -> None:
        def strict_half(value: Any) -> Any:
            if value is None:
                raise ValueError("no value to halve")
            return value / 2

        register("strictHalf", strict_half, min_args=1, max_args=1)

    @hookimpl
    def clusterpulse_register_aggregations(self, register: Register) -> None:
        register("naiveMedian", lambda values, spec: statistics.median(values))


SPEC: dict[str, Any] = {
    "source": {"apiVersion": CUSTOM_API_VERSION, "kind": "Cactus", "namespaces": {"include": ["team-a"]}},
    "fields": [
        {"name": "arms", "path": ".spec.arms", "type": "integer"},
        {"name": "phase", "path": ".status.phase"},
        {"name": "missing", "path": ".spec.nothing"},
    ],
    "computed": [
        {"name": "half", "expression": "strictHalf(missing)"},
        {"name": "halfArms", "expression": "strictHalf(arms)"},
    ],
    "aggregations": [
        {"name": "phaseMedian", "field": "phase", "function": "naiveMedian"},
        {"name": "arms", "field": "arms", "function": "naiveMedian"},
    ],
    "collection": {"intervalSeconds": 120, "timeoutSeconds": 10},
}


@pytest.fixture
def fragile(fleet: Fleet) -> Iterator[Fleet]:
    backend = RecordingBackend()
    host = PluginHost(
        [],
        extra={
            "cluster": ClusterPlugin,
            "metricsource": MetricSourcePlugin,
            "fragile": Fragile(),
            "recording": BackendPlugin(backend),
        },
    )
    config = Config(core=CoreSettings(plugins=(), namespace=NAMESPACE, request_timeout=10.0))
    runtime = build_runtime(config, host, hub=KubeClient(fleet.hub.api_client()))
    yield Fleet(fleet.hub, fleet.clusters, backend, runtime)
    runtime.pool.close()
    runtime.hub.close()


def test_failing_functions_are_logged_counted_and_reported(fragile: Fleet, caplog: pytest.LogCaptureFixture) -> None:
    fragile.apply("fragile", SPEC)
    with caplog.at_level(logging.WARNING):
        outcome = fragile.reconcile("fragile")
    assert outcome.ok, outcome.detail

    # Values stay null; the rest of the record and the other results are kept.
    east = {p.cluster: p.collection for p in fragile.backend.of(CustomResourcesPiece)}["east"]
    assert {r.name: (r.values["half"], r.values["halfArms"]) for r in east.resources} == {
        "saguaro": (None, 1.5),
        "barrel": (None, 0.0),
    }
    results = {p.cluster: p.results.values for p in fragile.backend.of(AggregationsPiece)}
    assert results["east"] == {"phaseMedian": None, "arms": 1.5}

    # east: the computed field and the text median; west (one resource) only the computed field.
    assert results["west"] == {"phaseMedian": "Blooming", "arms": 2}
    status = fragile.metric_source("fragile")["status"]
    assert status["errorsLastRun"] == 3
    assert status["message"] == (
        'Collected with 3 errors; first: cluster east: computed field "half": function strictHalf raised '
        "ValueError: no value to halve (2 resources)"
    )

    logged = [r.getMessage() for r in caplog.records if "function" in r.getMessage()]
    assert logged == [
        '[MetricSource clusterpulse/fragile] cluster east: computed field "half": function strictHalf raised '
        "ValueError: no value to halve (2 resources)",
        '[MetricSource clusterpulse/fragile] cluster east: aggregation "phaseMedian": function naiveMedian raised '
        "TypeError: unsupported operand type(s) for /: 'str' and 'int'",
        '[MetricSource clusterpulse/fragile] cluster west: computed field "half": function strictHalf raised '
        "ValueError: no value to halve",
    ]

    metrics = fragile.runtime.metrics

    def count(cluster: str, function: str) -> float | None:
        return metrics.get_sample_value(
            "clusterpulse_metricsource_function_errors_total",
            {"source": "clusterpulse/fragile", "cluster": cluster, "function": function},
        )

    assert count("east", "strictHalf") == 2.0
    assert count("east", "naiveMedian") == 1.0
    assert count("west", "strictHalf") == 1.0
