"""Realistic piece sets for the Redis backend tests (one cluster reconcile, a registry, a MetricSource)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from clusterpulse_model import (
    AggregationResults,
    ClusterMetrics,
    ClusterOperatorCondition,
    ClusterOperatorInfo,
    ClusterSpecRecord,
    ClusterStatusRecord,
    CollectedResource,
    CredentialsRef,
    CustomResourceCollection,
    NodeCondition,
    NodeMetrics,
    OperatorInfo,
    RegistryMetricsRecord,
    RegistrySpecRecord,
    RegistryStatusRecord,
    Taint,
)
from clusterpulse_model.pieces import (
    AggregationsPiece,
    ClusterInfoPiece,
    ClusterLabelsPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    ClusterSpecPiece,
    ClusterStatusPiece,
    CustomResourcesPiece,
    EventPiece,
    MetricSourcePiece,
    NodesPiece,
    OperatorsPiece,
    PodSummary,
    RegistryMetricsPiece,
    RegistrySpecPiece,
    RegistryStatusPiece,
    ResourceCollection,
    ResourceCollectionPiece,
)

from clusterpulse_core.pieces import Piece

#: The clock of the upstream tests (the instant tests/vectors/redis_examples.json uses).
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def node(name: str, roles: tuple[str, ...] = ("worker",), **overrides: Any) -> NodeMetrics:
    """A Ready node with a condition, a taint and plausible capacity."""
    values: dict[str, Any] = {
        "timestamp": T0,
        "status": "Ready",
        "roles": roles,
        "conditions": (NodeCondition("Ready", "True", "KubeletReady", "ready", T0),),
        "cpu_capacity": 8.0,
        "memory_capacity": 32 * 2**30,
        "cpu_allocatable": 7.5,
        "memory_allocatable": 31 * 2**30,
        "cpu_requested": 2.0,
        "cpu_usage_percent": 26.67,
        "memory_usage_percent": 12.5,
        "pods_running": 10,
        "pods_total": 11,
        "labels": {"kubernetes.io/hostname": name},
        "taints": (Taint("k", "v", "NoSchedule"),),
        "internal_ip": "10.0.0.1",
    }
    values.update(overrides)
    return NodeMetrics(name=name, **values)


def cluster_reconcile(cluster: str, nodes: int = 3) -> list[Piece]:
    """Everything one successful pull reconcile of an OpenShift cluster with OLM stores."""
    node_list = tuple(node(f"{cluster}-n{i}", roles=("worker", "infra") if i else ("master",)) for i in range(nodes))
    return [
        ClusterSpecPiece(
            cluster, ClusterSpecRecord("Display", "https://api.x:6443", CredentialsRef("s", "ns"), {"env": "prod"})
        ),
        ClusterLabelsPiece(cluster, {"env": "prod"}),
        NodesPiece(cluster, node_list),
        ClusterMetricsPiece(
            cluster,
            ClusterMetrics(
                timestamp=T0,
                nodes=nodes,
                nodes_ready=nodes,
                namespaces=2,
                namespace_list=("default", "kube-system"),
                pods=5,
            ),
        ),
        ClusterInfoPiece(cluster, {"api_url": "https://api.x:6443", "version": "v1.29.2"}),
        OperatorsPiece(
            cluster,
            (OperatorInfo("op.v1", status="Succeeded", installed_namespace="ops", available_in_namespaces=("ops",)),),
        ),
        ClusterOperatorsPiece(
            cluster,
            (
                ClusterOperatorInfo(
                    "console", "4.14", available=True, conditions=(ClusterOperatorCondition("Available", "True", T0),)
                ),
            ),
        ),
        ResourceCollectionPiece(
            cluster, ResourceCollection(timestamp=T0, pods=(PodSummary("p", "default"),), total_resources=1)
        ),
        CustomResourcesPiece(
            cluster,
            CustomResourceCollection(
                "default/vms",
                cluster,
                T0,
                1,
                resources=(CollectedResource("u1", "vm-1", "default", values={"cpu": 2}),),
            ),
        ),
        AggregationsPiece(cluster, AggregationResults("default/vms", T0, values={"count": 1})),
        ClusterStatusPiece(cluster, ClusterStatusRecord("healthy", "Cluster is reachable", T0)),
        EventPiece("cluster.reconciled", cluster, {"health": "healthy", "display_name": "Display"}, timestamp=T0),
    ]


def registry_reconcile(registry: str) -> list[Piece]:
    """What one registry reconcile stores."""
    return [
        RegistrySpecPiece(registry, RegistrySpecRecord("Reg", "https://reg.example.com")),
        RegistryStatusPiece(registry, RegistryStatusRecord(True, 87, "registry/2.0", last_check=T0)),
        RegistryMetricsPiece(registry, RegistryMetricsRecord(int(T0.timestamp()), 87, True)),
        EventPiece("registry.reconciled", registry, {"health": "healthy"}, timestamp=T0),
    ]


def metricsource(namespace: str, name: str, resource_type: str) -> MetricSourcePiece:
    """A compiled MetricSource (the compiled form as plain JSON data)."""
    compiled = {
        "name": name,
        "namespace": namespace,
        "rbac": {"resourceTypeName": resource_type},
        "source": {"kind": "VirtualMachine", "apiVersion": "kubevirt.io/v1"},
    }
    return MetricSourcePiece(namespace, name, compiled, resource_type, "VirtualMachine", "kubevirt.io/v1", T0, "h")


def custom_data(cluster: str, source_id: str) -> list[Piece]:
    """One cluster's collection and aggregations of one source."""
    return [
        CustomResourcesPiece(cluster, CustomResourceCollection(source_id, cluster, T0)),
        AggregationsPiece(cluster, AggregationResults(source_id, T0, values={"n": 0})),
    ]
