"""The vm_* groups of utils_public.json, run through the public pure functions."""

from __future__ import annotations

from typing import Any

from clusterpulse_model import ClusterMetrics, ClusterOperatorInfo, OperatorInfo
from clusterpulse_model.pieces import ClusterMetricsPiece
from clusterpulse_testing.vectors import decode_value, vector_test
from clusterpulse_vmwriter import (
    VMSettings,
    VMWriterBackend,
    cluster_lines,
    custom_resource_line,
    float_text,
    format_line,
    operator_lines,
)
from clusterpulse_vmwriter.render import epoch_ms

#: camelCase keys of the vectors' ClusterMetrics -> attribute names.
CLUSTER_METRIC_FIELDS = {
    "nodes": "nodes",
    "nodesReady": "nodes_ready",
    "pods": "pods",
    "podsRunning": "pods_running",
    "cpuCapacity": "cpu_capacity",
    "memoryCapacity": "memory_capacity",
    "namespaces": "namespaces",
    "deployments": "deployments",
}


@vector_test("utils", "vm_format_line")
def test_format_line(case: dict[str, Any]) -> None:
    value = int(case["value"]) if case["value_type"] == "int" else float(decode_value(case["value"]))
    assert format_line(case["metric"], case["cluster"], case["node"], value, case["ts_ms"]) == case["out"]


@vector_test("utils", "vm_float_text")
def test_float_text(case: dict[str, Any]) -> None:
    assert float_text(float(decode_value(case["in"]))) == case["out"]


@vector_test("utils", "vm_custom_resource_line")
def test_custom_resource_line(case: dict[str, Any]) -> None:
    line = custom_resource_line(
        case["aggregation"], case["cluster"], case["source_id"], decode_value(case["value"]), case["ts_ms"]
    )
    assert line == case["out"]


@vector_test("utils", "vm_operator_lines")
def test_operator_lines(case: dict[str, Any]) -> None:
    operators = [OperatorInfo(name=name) for name in case["operators"]]
    cluster_operators = [ClusterOperatorInfo(**info) for info in case["cluster_operators"]]
    assert operator_lines(case["cluster"], operators, cluster_operators, case["ts_ms"]) == case["out"]


@vector_test("utils", "vm_cluster_lines")
def test_cluster_lines(case: dict[str, Any], recorder: Any) -> None:
    metrics = ClusterMetrics(**{CLUSTER_METRIC_FIELDS[k]: v for k, v in case["metrics"].items()})
    assert cluster_lines(case["cluster"], metrics, case["ts_ms"]) == case["out"]

    # The same write through the backend, as the HTTP request the vector describes.
    backend = VMWriterBackend(VMSettings(endpoint=recorder.url + "/", enabled=True), clock_ms=lambda: case["ts_ms"])
    backend.store([ClusterMetricsPiece(case["cluster"], metrics)])
    assert backend.flush(10)
    backend.close()
    assert epoch_ms(metrics.timestamp, case["ts_ms"]) == case["ts_ms"]  # unset time -> receipt time
    [request] = recorder.requests
    http = case["http"]
    assert (request.method, request.path) == (http["method"], http["path"])
    assert request.headers["content-type"] == http["content_type"]
    assert request.body.endswith(b"\n") is http["body_ends_with_newline"]
    assert request.body.decode().splitlines() == case["out"]
