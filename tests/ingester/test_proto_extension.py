"""The protocol extension (docs/push-mode.md#protocol-extension): a Go ingester still reads our batches.

A Go ingester is built from the unmodified upstream listing; here the same listing is compiled
with grpcio-tools into a temporary package, our agent's serialized batch is decoded with it,
and every upstream field must be what our own stubs read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from clusterpulse_ingester.convert import batch_from_pieces, pieces_from_batch
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_model import ClusterMetrics, NodeCondition, NodeMetrics
from clusterpulse_model.pieces import (
    ClusterMetricsPiece,
    NodesPiece,
    PodSummary,
    ResourceCollection,
    ResourceCollectionPiece,
)
from google.protobuf.json_format import MessageToDict
from push_support import upstream_stubs

AT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
CREATED = datetime(2024, 9, 12, 8, 15, 10, tzinfo=UTC)


def _our_batch() -> pb.MetricsBatch:
    node = NodeMetrics(
        name="n1",
        status="Ready",
        roles=("worker",),
        cpu_capacity=4.0,
        cpu_allocatable=3.5,
        labels={"a": "b"},
        creation_timestamp=CREATED,
        conditions=(NodeCondition(type="Ready", status="True", reason="KubeletReady", last_transition_time=CREATED),),
    )
    metrics = ClusterMetrics(
        timestamp=AT,
        nodes=1,
        nodes_ready=1,
        namespaces=1,
        namespace_list=("app",),
        pods=1,
        deployments=1,
        services=2,
        statefulsets=3,
        daemonsets=4,
        pvcs=5,
    )
    collection = ResourceCollection(
        timestamp=AT, pods=(PodSummary("web-1", "app", "Running", "n1"),), truncated=True, total_resources=1
    )
    return batch_from_pieces(
        "c",
        [NodesPiece("c", (node,)), ClusterMetricsPiece("c", metrics), ResourceCollectionPiece("c", collection)],
        AT,
        batch_id="b-1",
    )


def test_a_go_ingester_reads_every_upstream_field_of_our_batch(tmp_path: Path) -> None:
    upstream = upstream_stubs(tmp_path)
    ours = _our_batch()
    assert ours.HasField("clusterpulse")
    decoded = upstream.MetricsBatch.FromString(ours.SerializeToString())
    without = pb.MetricsBatch()
    without.CopyFrom(ours)
    without.ClearField("clusterpulse")
    assert MessageToDict(decoded, preserving_proto_field_name=True) == MessageToDict(
        without, preserving_proto_field_name=True
    )
    # The extension is an unknown field to it, kept aside, not mistaken for an upstream one.
    assert decoded.SerializeToString(deterministic=True) == ours.SerializeToString(deterministic=True)
    assert "clusterpulse" not in upstream.MetricsBatch.DESCRIPTOR.fields_by_name


def test_our_ingester_stores_what_the_extension_carries() -> None:
    back = pieces_from_batch(_our_batch(), "c", AT)
    nodes = next(p for p in back if isinstance(p, NodesPiece)).nodes
    assert nodes[0].creation_timestamp == CREATED
    assert nodes[0].conditions == (
        NodeCondition(type="Ready", status="True", reason="KubeletReady", last_transition_time=CREATED),
    )
    metrics = next(p for p in back if isinstance(p, ClusterMetricsPiece)).metrics
    assert (metrics.services, metrics.statefulsets, metrics.daemonsets, metrics.pvcs) == (2, 3, 4, 5)
    collection = next(p for p in back if isinstance(p, ResourceCollectionPiece)).collection
    assert collection.truncated is True and collection.pods == (PodSummary("web-1", "app", "Running", "n1"),)


def test_a_go_agents_batch_stores_what_it_can_as_before() -> None:
    batch = _our_batch()
    batch.ClearField("clusterpulse")  # a Go agent has no such field
    back = pieces_from_batch(batch, "c", AT)
    node = next(p for p in back if isinstance(p, NodesPiece)).nodes[0]
    assert node.conditions == () and node.creation_timestamp is None  # unknown: left out, not made up
    metrics = next(p for p in back if isinstance(p, ClusterMetricsPiece)).metrics
    assert (metrics.services, metrics.pvcs) == (0, 0)
    assert not any(isinstance(p, ResourceCollectionPiece) for p in back)
