"""Cluster health (docs/readers.md#r7-health): NotReady nodes and requested CPU decide it, not reachability.

Each case is a managed-cluster emulator of four nodes (10 CPUs, 10 GiB allocatable each); the
reconcile's verdict is checked where readers see it: the Redis status, the ClusterConnection
status and the ``cluster.reconciled`` event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import three_node
from cluster_support import Harness

NODES = 4


def _node(index: int, ready: bool, cordoned: bool = False) -> dict[str, Any]:
    resources = {"cpu": "10", "memory": "10Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index}"},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                }
            ],
        },
    }


def _cluster(not_ready: int, cpu_millis: int, cordoned: int = 0) -> list[dict[str, Any]]:
    """Four nodes, the last ``not_ready`` of them NotReady, the first ``cordoned`` cordoned (and Ready),
    and one Running pod requesting ``cpu_millis``."""
    nodes = [_node(i, ready=i < NODES - not_ready, cordoned=i < cordoned) for i in range(NODES)]
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ("default", "app")]
    pods = [three_node.pod("app", "load", "node-0", "Running", [{"cpu": f"{cpu_millis}m", "memory": "1Gi"}])]
    return [*namespaces, *nodes, *pods]


@pytest.mark.parametrize(
    ("not_ready", "cpu_millis", "cordoned", "health", "message"),
    [
        (0, 1000, 0, "healthy", "Cluster is healthy"),
        (1, 1000, 0, "degraded", "Issues: 1 nodes not ready"),
        (2, 1000, 0, "unhealthy", "Issues: 2 nodes not ready"),  # half of the nodes: NODE_UNHEALTHY_THRESHOLD
        (0, 36492, 0, "degraded", "Issues: High CPU usage: 91.23%"),  # above CPU_CRITICAL_THRESHOLD (90)
        (0, 34800, 0, "healthy", "Issues: High CPU usage: 87.00%"),  # above the warning (85) only: named, not degraded
        (1, 36492, 0, "degraded", "Issues: 1 nodes not ready"),  # the first issue is the message
        # docs/compatibility.md#r8: a cordoned but Ready node is not "not ready" (the demo's k8s-staging),
        # though nodes_ready (R1) does not count it.
        (1, 1000, 1, "degraded", "Issues: 1 nodes not ready"),
        (0, 1000, 2, "healthy", "Cluster is healthy"),
    ],
    ids=[
        "all-ready",
        "one-not-ready",
        "half-not-ready",
        "cpu-critical",
        "cpu-warning",
        "both",
        "cordoned-and-not-ready",
        "cordoned-only",
    ],
)
def test_health_in_redis_the_cr_and_the_event(
    harness: Harness,
    kube_api: Callable[..., Any],
    not_ready: int,
    cpu_millis: int,
    cordoned: int,
    health: str,
    message: str,
) -> None:
    cluster = kube_api(objects=_cluster(not_ready, cpu_millis, cordoned), require_token="t")
    harness.add("c", cluster.url, token="t")

    outcome = harness.reconcile("c")

    assert outcome.ok, outcome.detail
    stored = harness.json("cluster:c:status")
    assert (stored["health"], stored["message"]) == (health, message)
    status = harness.cr("c")["status"]
    assert (status["phase"], status["health"], status["message"]) == ("Connected", health, message)
    assert [c["status"] for c in status["conditions"] if c["type"] == "Ready"] == ["True"]  # it was reached
    [event] = harness.events("c")
    assert event["type"] == "cluster.reconciled"
    assert event["data"] == {
        "health": health,
        "nodes": NODES,
        "nodes_ready": NODES - not_ready - cordoned,
        "namespaces": 2,
        "display_name": "",
    }
    assert harness.json("cluster:c:metrics")["nodes_not_ready"] == not_ready + cordoned


def test_thresholds_are_settings_with_the_upstream_env_vars(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    harness = make_harness(env={"CPU_CRITICAL_THRESHOLD": "95", "NODE_UNHEALTHY_THRESHOLD": "0.75"})
    cluster = kube_api(objects=_cluster(2, 36492), require_token="t")
    harness.add("c", cluster.url, token="t")

    assert harness.reconcile("c").ok
    # Half the nodes are below 0.75, 91.23 % is below 95: degraded by the nodes only.
    assert harness.json("cluster:c:status") | {"last_check": None} == {
        "health": "degraded",
        "message": "Issues: 2 nodes not ready",
        "last_check": None,
    }


def test_a_bad_threshold_names_its_key(make_harness: Callable[..., Harness]) -> None:
    from clusterpulse_core.config import ConfigError

    with pytest.raises(ConfigError, match=r"plugins\.cluster\.node_unhealthy_threshold: must be in \(0, 1\]"):
        make_harness(settings={"node_unhealthy_threshold": 1.5})


def test_an_unreachable_cluster_stays_unhealthy(harness: Harness) -> None:
    harness.add("gone", "https://127.0.0.1:1", token="t")

    outcome = harness.reconcile("gone")

    assert not outcome.ok
    stored = harness.json("cluster:gone:status")
    assert stored["health"] == "unhealthy" and stored["message"].startswith("connection test failed")
    assert harness.cr("gone")["status"]["health"] == "unhealthy"
