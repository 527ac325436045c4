"""Pieces -> MetricsBatch (agent) -> pieces (ingester): what survives, what the proto cannot carry."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
from clusterpulse_ingester.convert import batch_from_pieces, cluster_metrics_of, pieces_from_batch
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_metricsource.agent import AgentSources
from clusterpulse_metricsource.catalog import builtin_catalog
from clusterpulse_metricsource.compiler import compile_metric_source
from clusterpulse_model import (
    AggregationResults,
    ClusterMetrics,
    CollectedResource,
    CustomResourceCollection,
    NodeCondition,
    NodeMetrics,
    OperatorInfo,
)
from clusterpulse_model.cluster import ObjectCounts, PodPhaseCounts, cluster_metrics
from clusterpulse_model.pieces import (
    AggregationsPiece,
    ClusterInfoPiece,
    ClusterMetricsPiece,
    ClusterStatusPiece,
    CustomResourcesPiece,
    EventPiece,
    NamespacesPiece,
    NodesPiece,
    OperatorsPiece,
)

from clusterpulse_core.serde import dumps, unstructure

AT = datetime(2025, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)
LATER = datetime(2025, 3, 1, 12, 0, 5, tzinfo=UTC)


def test_round_trip_keeps_what_the_proto_carries() -> None:
    node = NodeMetrics(
        name="n1",
        timestamp=AT,
        status="Ready",
        roles=("worker",),
        cpu_capacity=4.0,
        memory_capacity=2**34,
        pods_total=3,
        labels={"a": "b"},
        internal_ip="10.0.0.1",
        conditions=(NodeCondition(type="Ready", status="True"),),
        external_ip="1.2.3.4",
    )
    metrics = ClusterMetrics(
        timestamp=AT,
        nodes=1,
        nodes_ready=1,
        namespaces=2,
        namespace_list=("a", "b"),
        pods=3,
        cpu_capacity=4.0,
        memory_capacity=2**34,
        deployments=1,
    )
    collection = CustomResourceCollection(
        source_id="ns/src",
        cluster_name="c",
        collected_at=AT,
        resource_count=1,
        duration_ms=7,
        resources=(CollectedResource(id="a/x", name="x", namespace="a", values={"r": 2, "nan": float("nan")}),),
    )
    pieces = [
        NodesPiece("c", (node,)),
        ClusterMetricsPiece("c", metrics),
        NamespacesPiece("c", ("a", "b")),
        ClusterInfoPiece(
            "c",
            {
                "api_url": "https://hub-side",
                "version": "v1",
                "platform": "OpenShift",
                "channel": "stable",
                "image": "not carried",
            },
        ),
        OperatorsPiece("c", (OperatorInfo(name="op", available_in_namespaces=("x", "y")),)),
        CustomResourcesPiece("c", collection),
        AggregationsPiece("c", AggregationResults("ns/src", values={"n": 3, "names": ["x"], "flag": True})),
    ]
    batch = batch_from_pieces("c", pieces, AT)
    assert batch.cluster_info.api_url == ""  # the agent never reports an API URL
    assert batch.operators[0].available_count == 2
    assert dict(batch.custom_resources[0].aggregation_values) == {"n": 3.0}  # numbers only

    back = pieces_from_batch(batch, "c", LATER)
    kinds = [type(p).__name__ for p in back]
    assert kinds == [
        "NodesPiece",
        "ClusterMetricsPiece",
        "NamespacesPiece",
        "ClusterInfoPiece",
        "OperatorsPiece",
        "CustomResourcesPiece",
        "AggregationsPiece",
        "ClusterStatusPiece",
        "EventPiece",
    ]
    nodes = back[0]
    assert isinstance(nodes, NodesPiece)
    got = nodes.nodes[0]
    assert got.timestamp == AT  # the batch's collected_at, not the receipt time
    assert (got.name, got.cpu_capacity, got.labels, got.internal_ip) == ("n1", 4.0, {"a": "b"}, "10.0.0.1")
    assert got.external_ip == ""  # not in the proto
    assert got.conditions == (NodeCondition(type="Ready", status="True"),)  # in the protocol extension
    assert got.creation_timestamp is None  # unknown, so left out of the stored value (not the zero time)
    assert "creation_timestamp" not in unstructure(got)
    got_metrics = back[1]
    assert isinstance(got_metrics, ClusterMetricsPiece)
    assert (got_metrics.metrics.nodes, got_metrics.metrics.namespace_list) == (1, ("a", "b"))
    info = back[3]
    assert isinstance(info, ClusterInfoPiece)
    assert info.info == {"api_url": "", "version": "v1", "platform": "OpenShift", "channel": "stable"}
    # With its ClusterConnection's endpoint known, a batch without api_url stores the endpoint.
    info = pieces_from_batch(batch, "c", LATER, endpoint="https://api.c:6443")[3]
    assert isinstance(info, ClusterInfoPiece) and info.info["api_url"] == "https://api.c:6443"
    batch.cluster_info.api_url = "https://sent"
    info = pieces_from_batch(batch, "c", LATER, endpoint="https://api.c:6443")[3]
    assert isinstance(info, ClusterInfoPiece) and info.info["api_url"] == "https://sent"  # what is sent wins
    resources = back[5]
    assert isinstance(resources, CustomResourcesPiece)
    assert resources.collection.resources[0].values == {"r": 2, "nan": None}
    assert resources.collection.collected_at == AT
    status, event = back[7], back[8]
    assert isinstance(status, ClusterStatusPiece)
    assert (status.status.health, status.status.message) == ("healthy", "Cluster is healthy")
    assert status.status.last_check == LATER
    assert isinstance(event, EventPiece) and event.data == {
        "health": "healthy",
        "source": "collector-push",
        "nodes": 1,
        "nodes_ready": 1,
        "namespaces": 2,
    }


def test_agent_sources_compile_what_they_can_and_skip_the_rest() -> None:
    program = compile_metric_source(
        {
            "metadata": {"name": "src", "namespace": "ns"},
            "spec": {
                "source": {"apiVersion": "v1", "kind": "ConfigMap", "namespaces": {"exclude": ["kube-*"]}},
                "fields": [{"name": "n", "path": ".data.n", "type": "integer"}],
                "computed": [{"name": "twice", "expression": "n * 2"}],
            },
        }
    )
    sources = AgentSources()
    problems = sources.replace([b"{not json", dumps(program.compiled), b'{"name": "x"}'], builtin_catalog())
    assert sources.source_ids == ["ns/src"]
    assert [p.split(":")[0] for p in problems] == ["metric_sources_json[0]", "metric_sources_json[2]"]
    rebuilt = sources._collectors[0].program
    assert rebuilt.values({"data": {"n": "21"}}) == {"n": 21, "twice": 42.0}
    assert rebuilt.namespace_filter is not None and not rebuilt.namespace_filter.keeps("kube-system")
    assert sources.replace([], builtin_catalog()) == [] and sources.source_ids == []


def test_every_node_field_the_proto_carries_lands_in_its_own_model_field() -> None:
    # The ingester builds NodeMetrics positionally: a distinct value in every proto field shows
    # each one reaching the model field of the same name, and nothing else being set.
    proto = pb.NodeMetrics(name="n1", status="Ready", roles=["worker", "infra"], labels={"k": "v", "z": ""})
    values: dict[str, object] = {}
    for number, field in enumerate(pb.NodeMetrics.DESCRIPTOR.fields, start=1):
        if field.name in ("name", "status", "roles", "labels"):
            continue
        value = (
            f"s{number}"
            if field.type == field.TYPE_STRING
            else number + 0.5
            if field.type == field.TYPE_DOUBLE
            else number * 1000
        )
        setattr(proto, field.name, value)
        values[field.name] = value
    batch = pb.MetricsBatch(cluster_name="c")
    batch.node_metrics.append(proto)
    batch.collected_at.FromDatetime(AT)
    [nodes_piece] = [p for p in pieces_from_batch(batch, "c", LATER) if isinstance(p, NodesPiece)]
    expected = NodeMetrics(
        name="n1", timestamp=AT, status="Ready", roles=("worker", "infra"), labels={"k": "v", "z": ""}, **values
    )  # type: ignore[arg-type]
    assert nodes_piece.nodes == (expected,)
    assert len(values) == 24  # every proto field but name, status, roles and labels


def test_pushed_cluster_totals_are_the_pull_formula() -> None:
    # cluster_metrics_of sums in one pass; the reference is the core's cluster_metrics (pull mode)
    # with the proto's own totals winning.
    nodes = tuple(
        NodeMetrics(
            name=f"n{i}",
            timestamp=AT,
            status=("Ready", "NotReady", "Unknown")[i % 3],
            cpu_capacity=8.0,
            cpu_allocatable=7.5 - i / 10,
            cpu_requested=1.25 * i,
            memory_capacity=2**35,
            memory_allocatable=2**34 + i,
            memory_requested=2**30 * i,
            storage_capacity=10**11 + i,
            pods_pending=i % 2,
            pods_failed=i // 3,
            pods_total=9,
        )
        for i in range(7)
    )
    proto = pb.ClusterMetrics(
        nodes=7,
        nodes_ready=3,
        namespaces=2,
        namespace_list=["a", "b"],
        pods=70,
        pods_running=60,
        cpu_capacity=56.0,
        memory_capacity=7 * 2**35,
        deployments=4,
    )
    for batch_nodes in (nodes, ()):
        pods = PodPhaseCounts(
            total=70,
            running=60,
            pending=sum(n.pods_pending for n in batch_nodes),
            failed=sum(n.pods_failed for n in batch_nodes),
        )
        reference = attrs.evolve(
            cluster_metrics(batch_nodes, ("a", "b"), AT, pods, ObjectCounts(deployments=4)),
            nodes=7,
            nodes_ready=3,
            nodes_not_ready=4,
            namespaces=2,
            cpu_capacity=56.0,
            memory_capacity=7 * 2**35,
        )
        got = cluster_metrics_of(proto, batch_nodes, AT)
        assert got == reference
        assert [type(v) for v in attrs.astuple(got)] == [type(v) for v in attrs.astuple(reference)]
