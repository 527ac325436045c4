"""The ingester over real gRPC on loopback: authentication, ordering rules, acks, config pushes, TLS."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from clusterpulse_ingester.convert import timestamp_of
from clusterpulse_ingester.plugin import IngesterPlugin
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc
from clusterpulse_ingester.server import REFUSED
from clusterpulse_model import ClusterMetrics
from clusterpulse_model.pieces import ClusterMetricsPiece, MetricSourceDeletion, MetricSourcePiece
from clusterpulse_testing.polling import eventually
from push_support import HUB_NAMESPACE, TOKEN, WAIT, Stream, agent_connection

from clusterpulse_core.context import Runtime
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.runtime.sharding import HashRing, ShardMember, object_key
from clusterpulse_core.serde import loads


def batch(
    cluster: str,
    batch_id: str = "b-1",
    nodes: int = 2,
    values_json: bytes = b'{"replicas": 3}',
    collected_at: datetime | None = None,
) -> pb.MetricsBatch:
    out = pb.MetricsBatch(cluster_name=cluster, batch_id=batch_id)
    out.collected_at.CopyFrom(timestamp_of(collected_at or datetime.now(UTC)))
    out.cluster_metrics.CopyFrom(
        pb.ClusterMetrics(
            nodes=nodes,
            nodes_ready=nodes,
            namespaces=2,
            namespace_list=["default", "app"],
            pods=5,
            pods_running=4,
            cpu_capacity=8.0,
            memory_capacity=2**34,
            deployments=3,
        )
    )
    out.node_metrics.extend(
        pb.NodeMetrics(
            name=f"n{i}", status="Ready", cpu_capacity=4.0, cpu_allocatable=3.5, cpu_requested=0.5, pods_total=2
        )
        for i in range(nodes)
    )
    out.cluster_info.CopyFrom(pb.ClusterInfo(version="v1.29.1", platform="linux/amd64"))
    out.custom_resources.append(
        pb.CustomResourceBatch(
            source_id="clusterpulse/deploys",
            resource_count=1,
            duration_ms=3,
            resources=[pb.CustomCollectedResource(id="app/web", namespace="app", name="web", values_json=values_json)],
            aggregation_values={"total": 3.0},
        )
    )
    return out


@pytest.fixture
def ingester(start_ingester: Callable[..., tuple[Runtime, Any]]) -> tuple[Runtime, Any]:
    return start_ingester()


def _port(runtime: Runtime) -> int:
    plugin = runtime.plugins.plugin("ingester")
    assert isinstance(plugin, IngesterPlugin) and plugin.server is not None
    return plugin.server.port


def _keys(redis_url: str, pattern: str) -> list[bytes]:
    client = redis.Redis.from_url(redis_url)
    try:
        return sorted(client.keys(pattern))
    finally:
        client.close()


def _sample(runtime: Runtime, name: str, **labels: str) -> float:
    return runtime.metrics.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("metadata_token", "register_token", "reason"),
    [
        ("wrong", "wrong", "bad_token"),
        (None, "", "missing_token"),
        (TOKEN + "edge", "wrong", "bad_token"),  # both are checked when both are sent
        (None, TOKEN + "other", "bad_token"),  # another cluster's token
    ],
)
def test_wrong_or_missing_token_is_unauthenticated_and_stores_nothing(
    ingester: tuple[Runtime, Any], redis_url: str, metadata_token: str | None, register_token: str, reason: str
) -> None:
    runtime, recording = ingester
    stream = Stream(_port(runtime), metadata_token)
    stream.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=register_token)))
    stream.send(pb.ConnectRequest(metrics=batch("edge")))
    error = stream.error()
    stream.close()
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert _keys(redis_url, "cluster:edge:*") == []
    assert recording.pieces == []
    assert agent_connection(runtime.plugins, "edge") is None
    assert _sample(runtime, "clusterpulse_ingester_streams_rejected_total", reason=reason) == 1


def test_unknown_cluster_and_bad_names_are_refused(
    ingester: tuple[Runtime, Any], redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, _ = ingester
    for name, detail in (("ghost", "unknown cluster 'ghost'"), ("Bad/Name", "not a valid ClusterConnection name")):
        stream = Stream(_port(runtime), TOKEN)
        stream.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name=name, token=TOKEN)))
        error = stream.error()
        stream.close()
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        # The agent learns nothing about the hub; the hub's log says why.
        assert error.details() == REFUSED
        assert detail in caplog.text
    assert _keys(redis_url, "*ghost*") == []


def test_a_standby_replica_sends_agents_elsewhere(
    ingester: tuple[Runtime, Any], caplog: pytest.LogCaptureFixture
) -> None:
    runtime, recording = ingester
    runtime.fence.require_lease()  # leader election, Lease not held: this replica may not store
    stream = Stream(_port(runtime), TOKEN + "edge")
    stream.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN + "edge")))
    stream.send(pb.ConnectRequest(metrics=batch("edge")))
    error = stream.error()
    stream.close()
    assert error.code() == grpc.StatusCode.UNAVAILABLE  # the agent backs off and reconnects
    assert error.details() == REFUSED
    assert "this replica does not store now (the leader Lease is not held" in caplog.text
    assert agent_connection(runtime.plugins, "edge") is None and recording.pieces == []
    assert _sample(runtime, "clusterpulse_ingester_streams_rejected_total", reason="standby") == 1

    runtime.fence.renewed(time.monotonic() + 60)  # became the leader
    stream = Stream(_port(runtime), TOKEN + "edge")
    assert stream.register("edge", TOKEN + "edge").WhichOneof("payload") == "config"
    stream.close()


def test_with_sharding_only_the_replica_holding_the_cluster_takes_its_agent(
    ingester: tuple[Runtime, Any], hub: Any
) -> None:
    runtime, recording = ingester
    cluster = ObjectRef("ClusterConnection", HUB_NAMESPACE, "edge")
    member = ShardMember(
        runtime.hub, HUB_NAMESPACE, "a", {}, lease_duration=30.0, renew_deadline=20.0, retry_period=1.0
    )
    runtime.shard = member
    member.round()  # alone on the ring: owns every cluster
    assert not member.holds(cluster)  # not yet admitted by its reconcile: the agent goes elsewhere
    stream = Stream(_port(runtime), TOKEN + "edge")
    stream.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN + "edge")))
    assert stream.error().code() == grpc.StatusCode.UNAVAILABLE
    stream.close()
    assert member.admit(cluster) and member.holds(cluster)  # what the ClusterConnection gate does
    stream = Stream(_port(runtime), TOKEN + "edge")
    assert stream.register("edge", TOKEN + "edge").WhichOneof("payload") == "config"
    stream.send(pb.ConnectRequest(metrics=batch("edge", "before")))
    assert stream.recv().ack.success

    # A second member joins and the ring gives it "edge": the stream is cut, the batch not stored.
    other = next(f"m{i}" for i in range(200) if HashRing(["a", f"m{i}"]).owner(object_key(cluster)) == f"m{i}")
    hub.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": f"clusterpulse-shard-{other}", "namespace": HUB_NAMESPACE},
            "spec": {
                "holderIdentity": other,
                "leaseDurationSeconds": 30,
                "renewTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            },
        }
    )
    member.round()
    assert member.members == tuple(sorted(("a", other))) and not member.holds(cluster)
    stored = len(recording.pieces)
    stream.send(pb.ConnectRequest(metrics=batch("edge", "after")))
    error = stream.error()
    stream.close()
    assert error.code() == grpc.StatusCode.UNAVAILABLE  # the agent keeps the batch and reconnects
    assert "cluster 'edge' is held by another replica (sharding)" in error.details()
    assert len(recording.pieces) == stored and agent_connection(runtime.plugins, "edge") is None

    stream = Stream(_port(runtime), TOKEN + "edge")  # and a new registration goes elsewhere too
    stream.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN + "edge")))
    assert stream.error().code() == grpc.StatusCode.UNAVAILABLE
    stream.close()
    assert _sample(runtime, "clusterpulse_ingester_streams_rejected_total", reason="other_replica") == 3


class GatedBackend:
    """A storage backend whose stores wait at a gate (a slow Redis, a loaded hub)."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()

    def store(self, pieces: Any) -> None:
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"

    def ready(self) -> str | None:
        return None

    def close(self) -> None:
        self.gate.set()


def test_a_batch_resent_while_its_first_copy_is_stored_is_stored_once(
    start_ingester: Callable[..., tuple[Runtime, Any]],
) -> None:
    # The agent gave up on its ack (ack timeout, stream cut) and resent the batch on a new stream
    # while the ingester was still storing the first copy: one store, both copies acked.
    gated = GatedBackend()
    runtime, recording = start_ingester(gated)
    first = Stream(_port(runtime), TOKEN + "edge")
    first.register("edge", TOKEN + "edge")
    first.send(pb.ConnectRequest(metrics=batch("edge", "b-1")))
    assert gated.entered.wait(20)
    first.close()  # the first stream ends while its batch is being stored
    second = Stream(_port(runtime), TOKEN + "edge")
    second.register("edge", TOKEN + "edge")
    second.send(pb.ConnectRequest(metrics=batch("edge", "b-1")))
    # The resend has reached the ingester (counted as it arrives) while the first copy still waits.
    eventually(
        lambda: _sample(runtime, "clusterpulse_ingester_batches_received_total") >= 2,
        "the resend to reach the ingester",
        timeout=WAIT,
    )
    gated.gate.set()
    ack = second.recv().ack
    assert (ack.batch_id, ack.success) == ("b-1", True)
    assert len(recording.of(ClusterMetricsPiece)) == 1
    second.send(pb.ConnectRequest(metrics=batch("edge", "b-1")))  # and once stored, a resend is a no-op
    assert second.recv().ack.success
    second.close()
    assert len(recording.of(ClusterMetricsPiece)) == 1


@pytest.mark.parametrize(
    ("first", "code", "reason", "detail"),
    [
        (
            pb.ConnectRequest(metrics=pb.MetricsBatch(cluster_name="edge", batch_id="x")),
            grpc.StatusCode.FAILED_PRECONDITION,
            "not_registered",
            "metrics received before registration",
        ),
        (
            pb.ConnectRequest(health=pb.HealthReport(cluster_name="edge")),
            grpc.StatusCode.FAILED_PRECONDITION,
            "not_registered",
            "health received before registration",
        ),
        (
            pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="", token=TOKEN)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "empty_name",
            "register: cluster_name is required",
        ),
        (pb.ConnectRequest(), grpc.StatusCode.INVALID_ARGUMENT, "empty_request", "ConnectRequest without a payload"),
        (
            pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN, version="x" * 70000)),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "oversized",
            "-byte message before registration (max_register_bytes 65536)",
        ),
        (
            pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token="wrong")),
            grpc.StatusCode.UNAUTHENTICATED,
            "bad_token",
            "invalid collector token",
        ),
        (
            pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="ghost", token=TOKEN + "edge")),
            grpc.StatusCode.UNAUTHENTICATED,
            "unknown_cluster",
            "unknown cluster 'ghost'",
        ),
    ],
)
def test_every_refusal_before_registration_tells_the_client_one_generic_text(
    ingester: tuple[Runtime, Any],
    caplog: pytest.LogCaptureFixture,
    first: pb.ConnectRequest,
    code: grpc.StatusCode,
    reason: str,
    detail: str,
) -> None:
    """docs/compatibility.md#c14: the client gets the status code and REFUSED, never the protocol's own texts
    nor anything naming the hub; the hub logs the detail and counts the refusal under its reason."""
    runtime, recording = ingester
    stream = Stream(_port(runtime), TOKEN + "edge" if reason != "bad_token" else "wrong")
    stream.send(first)
    error = stream.error()
    stream.close()
    assert (error.code(), error.details()) == (code, REFUSED)
    assert detail in caplog.text
    assert _sample(runtime, "clusterpulse_ingester_streams_rejected_total", reason=reason) == 1
    assert recording.pieces == []


def test_batches_are_stored_acked_and_the_connection_is_visible(ingester: tuple[Runtime, Any], redis_url: str) -> None:
    runtime, recording = ingester
    stream = Stream(_port(runtime), TOKEN + "edge")
    first = stream.register("edge", TOKEN + "edge", version="v9.9")
    assert first.WhichOneof("payload") == "config"
    assert list(first.config.metric_sources_json) == []
    connection = agent_connection(runtime.plugins, "edge")
    assert connection is not None and connection.version == "v9.9"

    collected = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=2)
    stream.send(pb.ConnectRequest(metrics=batch("edge", "b-1", collected_at=collected)))
    ack = stream.recv().ack
    assert (ack.batch_id, ack.success, ack.error) == ("b-1", True, "")
    client = redis.Redis.from_url(redis_url)
    try:
        metrics = loads(client.get("cluster:edge:metrics"))
        assert (metrics["nodes"], metrics["deployments"], metrics["timestamp"]) == (
            2,
            3,
            collected.strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        status = loads(client.get("cluster:edge:status"))
        assert (status["health"], status["message"]) == ("healthy", "Cluster is healthy")
        # No status.agent on the ClusterConnection: an agent the hub did not install, its own version.
        assert status["agent"] == {
            "deployed": False,
            "version": "v9.9",
            "connected": True,
            "last_heartbeat": status["last_check"],
        }
        assert loads(client.get("cluster:edge:info"))["version"] == "v1.29.1"
    finally:
        client.close()
    stored = recording.of(ClusterMetricsPiece)
    assert stored[0].metrics.timestamp == collected and stored[0].cluster == "edge"
    # The R1 fields (docs/compatibility.md#r1) the proto lacks are derived from the batch's nodes, as pull derives them.
    assert (stored[0].metrics.cpu_allocatable, stored[0].metrics.cpu_requested) == (7.0, 1.0)
    assert stored[0].metrics.cpu_usage_percent == 1.0 / 7.0 * 100
    assert (stored[0].metrics.nodes_not_ready, stored[0].metrics.pods) == (0, 5)

    before = connection.last_heartbeat
    stream.send(pb.ConnectRequest(health=pb.HealthReport(cluster_name="edge", buffered_batches=4)))
    later = eventually(
        lambda: (c := agent_connection(runtime.plugins, "edge")) and c.buffered_batches == 4 and c,
        "the heartbeat",
        timeout=WAIT,
    )
    assert later.last_heartbeat >= before

    # The same batch again (its ack was lost, the agent resends it): acked, not stored twice.
    stream.send(pb.ConnectRequest(metrics=batch("edge", "b-1", collected_at=collected)))
    assert stream.recv().ack.success
    assert len(recording.of(ClusterMetricsPiece)) == 1

    # A batch naming another cluster ends the stream without storing it.
    recording.clear()
    stream.send(pb.ConnectRequest(metrics=batch("other", "b-2")))
    error = stream.error()
    stream.close()
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert recording.pieces == []
    assert _keys(redis_url, "cluster:other:*") == []
    eventually(lambda: agent_connection(runtime.plugins, "edge") is None, "the stream to leave the table", timeout=WAIT)
    assert _sample(runtime, "clusterpulse_ingester_batches_acked_total") == 2
    assert _sample(runtime, "clusterpulse_ingester_bytes_received_total") > 100


def test_malformed_batches_get_a_false_ack_and_lose_nothing_else(ingester: tuple[Runtime, Any], redis_url: str) -> None:
    runtime, _ = ingester
    other = Stream(_port(runtime), TOKEN + "other")
    other.register("other", TOKEN + "other")
    other.send(pb.ConnectRequest(metrics=batch("other", "o-1")))
    assert other.recv().ack.success

    edge = Stream(_port(runtime), TOKEN + "edge")
    edge.register("edge", TOKEN + "edge")
    for values, detail in ((b"{not json", "not valid JSON"), (b"[1, 2]", "expected a JSON object")):
        edge.send(pb.ConnectRequest(metrics=batch("edge", "bad", values_json=values)))
        ack = edge.recv().ack
        assert not ack.success
        assert ack.error.startswith("rejected: custom_resources[0].resources[0].values_json: " + detail)
    assert _keys(redis_url, "cluster:edge:*") == []
    # The stream is still usable, and the other cluster's data is intact.
    edge.send(pb.ConnectRequest(metrics=batch("edge", "good")))
    assert edge.recv().ack.success
    assert _keys(redis_url, "cluster:other:metrics") == [b"cluster:other:metrics"]
    assert _sample(runtime, "clusterpulse_ingester_batches_rejected_total", reason="malformed") == 2
    edge.close()
    other.close()


def test_oversized_message_is_refused_and_the_server_keeps_serving(
    start_ingester: Callable[..., tuple[Runtime, Any]],
) -> None:
    runtime, recording = start_ingester(max_message_bytes=64 * 1024)
    big = Stream(_port(runtime), TOKEN + "edge")
    big.register("edge", TOKEN + "edge")
    big.send(pb.ConnectRequest(metrics=batch("edge", "huge", nodes=2000)))
    assert big.error().code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    big.close()
    small = Stream(_port(runtime), TOKEN + "edge")
    small.register("edge", TOKEN + "edge")
    small.send(pb.ConnectRequest(metrics=batch("edge", "small")))
    assert small.recv().ack.success
    small.close()
    assert len(recording.of(ClusterMetricsPiece)) == 1


def test_storage_failure_is_a_false_ack_then_recovers(ingester: tuple[Runtime, Any], redis_server: Any) -> None:
    runtime, _ = ingester
    stream = Stream(_port(runtime), TOKEN + "edge")
    stream.register("edge", TOKEN + "edge")
    redis_server.stop()
    try:
        stream.send(pb.ConnectRequest(metrics=batch("edge", "while-down")))
        ack = stream.recv().ack
        assert not ack.success and ack.error.startswith("storage failed: ")
        assert "redis" in ack.error
    finally:
        redis_server.start()
    stream.send(pb.ConnectRequest(metrics=batch("edge", "after")))
    assert eventually(lambda: stream.recv().ack.success, "a stored batch", timeout=20)
    stream.close()
    assert _sample(runtime, "clusterpulse_ingester_batches_rejected_total", reason="storage") == 1


def test_metricsource_changes_reach_connected_agents(ingester: tuple[Runtime, Any]) -> None:
    runtime, _ = ingester
    stream = Stream(_port(runtime), TOKEN + "edge")
    assert list(stream.register("edge", TOKEN + "edge").config.metric_sources_json) == []
    piece = MetricSourcePiece(namespace="clusterpulse", name="deploys", compiled=ClusterMetrics(nodes=1), hash="h1")
    runtime.store.put(piece)
    update = stream.recv().config
    assert [loads(doc)["nodes"] for doc in update.metric_sources_json] == [1]
    runtime.store.put(piece)  # unchanged hash: no update
    runtime.store.put(MetricSourceDeletion("clusterpulse", "deploys"))
    assert list(stream.recv().config.metric_sources_json) == []
    stream.close()


def test_tls_with_a_private_ca_and_a_server_name_override(
    start_ingester: Callable[..., tuple[Runtime, Any]], tmp_path: Path
) -> None:
    from clusterpulse_ingester.agent.runner import open_channel
    from clusterpulse_ingester.settings import IngesterSettings
    from clusterpulse_testing.tls import make_certificates

    made = make_certificates(tmp_path, "clusterpulse-ingester.clusterpulse.svc")
    ca, cert, key = made.ca_file, made.cert_file, made.key_file
    plain, _ = start_ingester()
    assert _sample(plain, "clusterpulse_ingester_plaintext") == 1  # and a start-up warning
    runtime, _ = start_ingester(tls_enabled=True, tls_cert=str(cert), tls_key=str(key))
    assert _sample(runtime, "clusterpulse_ingester_plaintext") == 0
    port = _port(runtime)

    async def register(settings: IngesterSettings) -> pb.ConnectResponse:
        async with open_channel(settings) as channel:
            call = pb_grpc.CollectorServiceStub(channel).Connect(
                metadata=(("authorization", f"Bearer {TOKEN}edge"),), timeout=10
            )
            await call.write(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN + "edge")))
            response = await call.read()
            call.cancel()
            return response

    import asyncio

    good = IngesterSettings(
        ingester_address=f"127.0.0.1:{port}",
        tls_enabled=True,
        tls_ca=str(ca),
        tls_server_name="clusterpulse-ingester.clusterpulse.svc",
    )
    assert asyncio.run(register(good)).WhichOneof("payload") == "config"
    for bad in (
        IngesterSettings(
            ingester_address=f"127.0.0.1:{port}",
            tls_enabled=True,
            tls_ca=str(ca),
            tls_server_name="someone-else.example",
        ),
        IngesterSettings(ingester_address=f"127.0.0.1:{port}", tls_enabled=False),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            asyncio.run(register(bad))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE


class SlowBackend:
    """A backend that takes its time, so a batch is in flight when the ingester is told to stop."""

    name = "slow"

    def __init__(self) -> None:
        self.entered = threading.Event()

    def store(self, pieces: Any) -> None:
        self.entered.set()
        time.sleep(1.0)

    def ready(self) -> str | None:
        return None

    def close(self) -> None:
        pass


def test_stop_acks_the_batch_in_flight_then_closes_streams(start_ingester: Callable[..., tuple[Runtime, Any]]) -> None:
    slow = SlowBackend()
    runtime, recording = start_ingester(slow)
    plugin = runtime.plugins.plugin("ingester")
    assert isinstance(plugin, IngesterPlugin) and plugin.server is not None
    stream = Stream(plugin.server.port, TOKEN + "edge")
    stream.register("edge", TOKEN + "edge")
    stream.send(pb.ConnectRequest(metrics=batch("edge", "in-flight")))
    assert slow.entered.wait(10)
    stopper = threading.Thread(target=plugin.server.stop)
    stopper.start()
    ack = stream.recv().ack
    assert (ack.batch_id, ack.success) == ("in-flight", True)
    assert stream.error().code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    stopper.join(10)
    assert not stopper.is_alive()
    stream.close()
    assert len(recording.of(ClusterMetricsPiece)) == 1


@pytest.mark.parametrize(
    ("not_ready", "cpu_requested", "cordoned", "health", "message"),
    [
        (0, 0.5, "", "healthy", "Cluster is healthy"),
        (1, 0.5, "", "degraded", "Issues: 1 nodes not ready"),
        (2, 0.5, "", "unhealthy", "Issues: 2 nodes not ready"),
        (0, 3.2, "", "degraded", "Issues: High CPU usage: 91.43%"),
        # docs/compatibility.md#r8: a cordoned node (SchedulingDisabled) is Ready unless its Ready condition,
        # sent in the protocol extension, says otherwise; a Go agent's batch has the status alone.
        (1, 0.5, "go-agent", "degraded", "Issues: 1 nodes not ready"),
        (1, 0.5, "ready", "degraded", "Issues: 1 nodes not ready"),
        (1, 0.5, "not-ready", "unhealthy", "Issues: 2 nodes not ready"),
    ],
    ids=[
        "all-ready",
        "one-not-ready",
        "half-not-ready",
        "cpu-critical",
        "cordoned-go-agent",
        "cordoned-ready",
        "cordoned-not-ready",
    ],
)
def test_a_pushed_batch_gets_the_health_a_pull_gives(
    ingester: tuple[Runtime, Any],
    redis_url: str,
    not_ready: int,
    cpu_requested: float,
    cordoned: str,
    health: str,
    message: str,
) -> None:
    """docs/readers.md#r7-health for push: the cluster plugin's thresholds, through the health hook."""
    runtime, _ = ingester
    stream = Stream(_port(runtime), TOKEN + "edge")
    stream.register("edge", TOKEN + "edge")
    sent = batch("edge", "b-health", nodes=4)
    sent.cluster_metrics.nodes_ready = 4 - not_ready
    for node in sent.node_metrics[4 - not_ready :]:
        node.status = "NotReady"
    for node in sent.node_metrics:
        node.cpu_requested = cpu_requested
    if cordoned:
        first = sent.node_metrics[0]
        first.status = "SchedulingDisabled"
        sent.cluster_metrics.nodes_ready -= 1
        if cordoned != "go-agent":
            sent.clusterpulse.nodes.append(
                pb.ExtensionNode(
                    name=first.name,
                    conditions=[
                        pb.ExtensionNodeCondition(type="Ready", status="True" if cordoned == "ready" else "False")
                    ],
                )
            )
    stream.send(pb.ConnectRequest(metrics=sent))
    assert stream.recv().ack.success
    # What the hub's reconcile of the pushed cluster patches into its ClusterConnection.
    connection = agent_connection(runtime.plugins, "edge")
    assert connection is not None and connection.health == health
    stream.close()
    client = redis.Redis.from_url(redis_url)
    try:
        status = loads(client.get("cluster:edge:status"))
        assert (status["health"], status["message"]) == (health, message)
        event = loads(client.lindex("events:edge", 0))
        assert event["type"] == "cluster.reconciled"
        assert event["data"] == {
            "health": health,
            "source": "collector-push",
            "nodes": 4,
            "nodes_ready": 4 - not_ready - bool(cordoned),
            "namespaces": 2,
        }
    finally:
        client.close()


def test_a_batch_over_the_count_bounds_is_stored_truncated_and_says_so(
    start_ingester: Callable[..., tuple[Runtime, Any]], redis_url: str
) -> None:
    """``max_batch_nodes`` 50 and ``max_batch_objects`` 10 against a batch of 60 nodes (2 with invalid names),
    13 namespaces and 12 MetricSource resources: stored truncated, counted as stored, reported."""
    runtime, _ = start_ingester(max_batch_nodes=50, max_batch_objects=10)
    sent = batch("edge", "big", nodes=60)
    sent.node_metrics[3].name = "edge:metrics"
    sent.node_metrics[4].name = "bad\nname"
    sent.cluster_metrics.namespace_list.extend(f"ns-{i}" for i in range(11))
    sent.cluster_metrics.namespaces = 13
    resources = sent.custom_resources[0]
    resources.resources.extend(
        pb.CustomCollectedResource(id=f"app/r{i}", namespace="app", name=f"r{i}", values_json=b'{"replicas": 1}')
        for i in range(11)
    )
    resources.resource_count = 12
    stream = Stream(_port(runtime), TOKEN + "edge")
    stream.register("edge", TOKEN + "edge")
    stream.send(pb.ConnectRequest(metrics=sent))
    ack = stream.recv().ack
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        members = client.smembers("cluster:edge:nodes")
        metrics = loads(client.get("cluster:edge:metrics"))
        status = loads(client.get("cluster:edge:status"))
        namespaces = loads(client.get("cluster:edge:namespaces"))["namespaces"]
        custom = loads(client.get("cluster:edge:custom:clusterpulse/deploys:resources"))
    finally:
        client.close()
        stream.close()
    print(f"\nack {ack.success}; nodes stored {len(members)}; status {status['message']!r}")

    def skipped(what: str, reason: str) -> float | None:
        return runtime.metrics.get_sample_value(
            "clusterpulse_collection_skipped", {"cluster": "edge", "what": what, "reason": reason}
        )

    assert ack.success
    assert len(members) == 50 and "edge:metrics" not in members and "n59" not in members
    assert (metrics["nodes"], metrics["nodes_ready"], metrics["namespaces"]) == (50, 50, 10)
    assert namespaces == ["default", "app", *(f"ns-{i}" for i in range(8))]
    for phrase in (
        "stored 50 of 60 nodes (2 skipped: invalid name, 8 skipped: over max_batch_nodes (50))",
        "stored 10 of 13 namespaces (3 skipped: over max_batch_objects (10))",
        "stored 10 of 12 resources of clusterpulse/deploys (2 skipped: over max_batch_objects (10))",
    ):
        assert phrase in status["message"]
    assert skipped("nodes", "over max_batch_nodes (50)") == 8
    assert skipped("nodes", "invalid name") == 2
    assert skipped("namespaces", "over max_batch_objects (10)") == 3
    assert len(custom["resources"]) == 10 and custom["truncated"] is True


def test_pushed_olm_operators_are_written_again_when_redis_loses_its_data(
    start_ingester: Callable[..., tuple[Runtime, Any]], redis_url: str
) -> None:
    """The agent sends operators only when it scans (minutes apart): after Redis comes back
    empty, the ingester writes the last ones again at once, not at the agent's next scan."""
    runtime, _ = start_ingester()
    sent = batch("edge", "olm")
    sent.operators.append(
        pb.OperatorInfo(
            name="cert-manager",
            display_name="cert-manager",
            version="1.0.0",
            status="Succeeded",
            installed_namespace="cert-manager",
        )
    )
    stream = Stream(_port(runtime), TOKEN + "edge")
    stream.register("edge", TOKEN + "edge")
    stream.send(pb.ConnectRequest(metrics=sent))
    assert stream.recv().ack.success
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.exists("cluster:edge:operators", "cluster:edge:operators_summary") == 2
        client.flushall()
        # What the Redis plugin's restart watcher calls once it notices (tested in tests/faults).
        runtime.storage_lost("redis flushed by the test")
        eventually(
            lambda: client.exists("cluster:edge:operators", "cluster:edge:operators_summary") == 2,
            "the operators written again after the flush",
            timeout=WAIT,
        )
        assert loads(client.get("cluster:edge:operators"))[0]["name"] == "cert-manager"
    finally:
        client.close()
        stream.close()
