"""Keys the readers need (docs/compatibility.md#r1 to #r3): the 24 metrics, node conditions, resource lists."""

from __future__ import annotations

from datetime import UTC, datetime

import redis
from clusterpulse_model import ClusterMetrics, NodeCondition, NodeMetrics
from clusterpulse_model.pieces import (
    ClusterDeletion,
    ClusterMetricsPiece,
    DaemonSetSummary,
    NodesPiece,
    PodSummary,
    ResourceCollection,
    ResourceCollectionPiece,
)
from clusterpulse_redis import RedisStore

from clusterpulse_core.serde import loads

T1 = datetime(2024, 12, 1, 10, 0, 0, tzinfo=UTC)


def test_conditions_hash_is_rewritten_with_the_node_and_deleted_with_it(store: RedisStore, raw: redis.Redis) -> None:
    ready = NodeCondition("Ready", "True", "KubeletReady", "kubelet is posting ready status", T1)
    pressure = NodeCondition("DiskPressure", "True", "KubeletHasDiskPressure", "disk full", T1)
    store.store([NodesPiece("c1", (NodeMetrics("n1", conditions=(ready, pressure)),))])

    key = "cluster:c1:node:n1:conditions"
    assert {k.decode(): loads(v) for k, v in raw.hgetall(key).items()} == {
        "Ready": {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "last_transition_time": "2024-12-01T10:00:00Z",
        },
        "DiskPressure": {
            "type": "DiskPressure",
            "status": "True",
            "reason": "KubeletHasDiskPressure",
            "message": "disk full",
            "last_transition_time": "2024-12-01T10:00:00Z",
        },
    }
    assert 0 < raw.ttl(key) <= 600

    store.store([NodesPiece("c1", (NodeMetrics("n1", conditions=(ready,)),))])
    assert sorted(raw.hkeys(key)) == [b"Ready"]  # rewritten whole: the resolved condition is gone

    store.store([NodesPiece("c1", (NodeMetrics("n1"),))])
    assert not raw.exists(key)

    store.store([NodesPiece("c1", (NodeMetrics("n1", conditions=(ready,)),)), ClusterDeletion("c1")])
    assert not raw.exists(key)


def test_metrics_carry_the_24_fields(store: RedisStore, raw: redis.Redis) -> None:
    metrics = ClusterMetrics(
        timestamp=T1,
        nodes=4,
        nodes_ready=2,
        nodes_not_ready=2,
        pods=21,
        pods_pending=2,
        pods_failed=1,
        cpu_allocatable=26.0,
        cpu_requested=6.5,
        cpu_usage_percent=25.0,
        memory_requested=3,
        storage_capacity=7,
        pvcs=3,
        services=7,
        statefulsets=2,
        daemonsets=2,
        deployments=8,
    )
    store.store([ClusterMetricsPiece("c1", metrics)])
    stored = loads(raw.get("cluster:c1:metrics"))
    assert list(stored) == [
        "timestamp",
        "nodes",
        "nodes_ready",
        "nodes_not_ready",
        "namespaces",
        "pods",
        "pods_running",
        "pods_pending",
        "pods_failed",
        "cpu_capacity",
        "cpu_allocatable",
        "cpu_requested",
        "cpu_usage_percent",
        "memory_capacity",
        "memory_allocatable",
        "memory_requested",
        "memory_usage_percent",
        "storage_capacity",
        "storage_used",
        "pvcs",
        "services",
        "deployments",
        "statefulsets",
        "daemonsets",
    ]
    assert (stored["nodes_not_ready"], stored["pods_pending"], stored["cpu_usage_percent"], stored["pvcs"]) == (
        2,
        2,
        25.0,
        3,
    )
    assert 0 < raw.ttl("cluster:c1:metrics") <= 300


def test_an_emptied_resource_list_does_not_linger(store: RedisStore, raw: redis.Redis) -> None:
    pods = (PodSummary("p", "ns", "Running"),)
    daemonsets = (DaemonSetSummary("d", "kube-system", 3, 3, 3),)
    store.store([ResourceCollectionPiece("c1", ResourceCollection(T1, pods=pods, daemonsets=daemonsets))])
    assert raw.exists("cluster:c1:pods", "cluster:c1:daemonsets") == 2

    store.store([ResourceCollectionPiece("c1", ResourceCollection(T1, pods=pods))])
    assert raw.exists("cluster:c1:pods") and not raw.exists("cluster:c1:daemonsets")
    assert loads(raw.get("cluster:c1:resource_metadata"))["daemonsets_count"] == 0
