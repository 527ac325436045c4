"""The cluster groups of ``utils_public.json`` over the plugin's pure functions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from clusterpulse_cluster.clusteroperators import cluster_operator_info
from clusterpulse_cluster.info import derive_console_url
from clusterpulse_cluster.nodes import PodTally, node_metrics, node_roles, node_status, tally_pods
from clusterpulse_cluster.olm import operator_info
from clusterpulse_cluster.spec import error_requeue_seconds, reconcile_interval
from clusterpulse_cluster.wire_types import node_decoder, pod_decoder
from clusterpulse_model import NodeMetrics, ObjectCounts, cluster_metrics
from clusterpulse_testing.vectors import same_value, vector_test

from clusterpulse_core.serde import camel, unstructure

NOW = datetime(2025, 1, 1, tzinfo=UTC)
#: Go JSON names of NodeMetrics whose snake_case is not the plain conversion.
NODE_NAMES = {"internalIP": "internal_ip", "externalIP": "external_ip"}


def snake(name: str) -> str:
    """``cpuUsagePercent`` -> ``cpu_usage_percent`` (plus the IP spellings)."""
    return NODE_NAMES.get(name) or "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


@vector_test("utils", "cluster_reconcile_interval")
def test_reconcile_interval(case: dict[str, Any]) -> None:
    assert same_value(reconcile_interval(case["config_interval"], case["spec_interval"]), case["out"])


@vector_test("utils", "cluster_error_requeue_seconds")
def test_error_requeue(case: dict[str, Any]) -> None:
    assert same_value(error_requeue_seconds(case["interval"]), case["out"])


@vector_test("utils", "node_status")
def test_node_status(case: dict[str, Any]) -> None:
    conditions = [("Ready", status) for status in case["ready_conditions"]]
    assert node_status(conditions, case["unschedulable"]) == case["out"]


@vector_test("utils", "node_roles")
def test_node_roles(case: dict[str, Any]) -> None:
    roles = node_roles(case["labels"])
    assert sorted(roles) == sorted(case["out_set"])
    assert list(roles) == sorted(roles)


def _node_object(node: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": node["name"], "labels": node["labels"], "annotations": node["annotations"]},
        "spec": {"taints": node["taints"], "unschedulable": node["unschedulable"]},
        "status": {
            "conditions": node["conditions"],
            "capacity": node["capacity"],
            "allocatable": node["allocatable"],
            "addresses": node["addresses"],
            "nodeInfo": node["nodeInfo"],
            "images": [{"names": [f"img-{i}"]} for i in range(node["images_count"])],
            "volumesAttached": [{"name": f"vol-{i}"} for i in range(node["volumes_attached_count"])],
        },
    }


@vector_test("utils", "node_metrics_example")
def test_node_metrics_example(case: dict[str, Any]) -> None:
    node = node_decoder.decode(msgspec.json.encode(_node_object(case["node"])))
    pods = [
        pod_decoder.decode(
            msgspec.json.encode(
                {
                    "spec": {
                        "nodeName": case["node"]["name"],
                        "containers": [{"resources": {"requests": c["requests"]}} for c in p["containers"]],
                    },
                    "status": {"phase": p["phase"]},
                }
            )
        )
        for p in case["pods"]
    ]
    tallies: dict[str, PodTally] = {}
    tally_pods(pods, tallies)

    metrics = node_metrics(node, tallies.get(case["node"]["name"]), NOW)

    got = unstructure(metrics)
    for key, want in case["out"].items():
        if key == "roles_set":
            assert sorted(got["roles"]) == sorted(want)
        elif key == "conditions_count":
            assert len(got["conditions"]) == want
        else:
            assert same_value(got[snake(key)], want), key


@vector_test("utils", "cluster_metrics_aggregation")
def test_cluster_metrics(case: dict[str, Any]) -> None:
    nodes = [
        NodeMetrics(
            name=n["name"],
            status=n["status"],
            cpu_capacity=n["cpuCapacity"],
            memory_capacity=n["memoryCapacity"],
            pods_total=n["podsTotal"],
            pods_running=n["podsRunning"],
        )
        for n in case["nodes"]
    ]

    got = unstructure(
        cluster_metrics(nodes, case["namespaces"], NOW, counts=ObjectCounts(deployments=case["deployments"]))
    )

    assert got["namespace_list"] == case["namespaces"]
    for key, want in case["out"].items():
        assert same_value(got[snake(key)], want), key


@vector_test("utils", "cluster_operator_extraction")
def test_cluster_operator_extraction(case: dict[str, Any]) -> None:
    got = unstructure(cluster_operator_info(case["object"]))
    for key, want in case["out"].items():
        if key == "note":
            continue
        if key.endswith("_count"):
            assert len(got[key.removesuffix("_count")]) == want, key
        else:
            assert same_value(got[key], want), key


@vector_test("utils", "olm_operator_extraction_pull")
def test_olm_operator_extraction(case: dict[str, Any]) -> None:
    info = operator_info(case["csv"], case["subscription"])
    if case["out"] is None:
        assert info is None
        return
    assert info is not None
    got = {camel(key): value for key, value in unstructure(info).items()}
    for key, want in case["out"].items():
        assert same_value(got[key], want), key


@vector_test("utils", "console_url_derivation")
def test_console_url_derivation(case: dict[str, Any]) -> None:
    assert derive_console_url(case["endpoint"]) == case["out"]
