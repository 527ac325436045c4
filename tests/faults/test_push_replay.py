"""Push history keeps its own time, an agent reconnects soon after its ingester is back, and a
batch that can never be stored is rejected as such.

The trial stopped the ingester for five collect intervals: the agent reconnected 30 s after the
ingester listened again (it was in a long backoff step), and the ten replayed batches were
stored at their delivery time, one score for all (a hole, then a spike, for anyone reading
history). A pushed ``values_json`` nested too deeply was answered "storage failed:
RecursionError", so the agent kept sending a batch that can never be stored.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc
from clusterpulse_ingester.server import REJECTED
from clusterpulse_ingester.settings import IngesterSettings
from clusterpulse_model import collector_token
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import free_port
from fault_support import HUB_NAMESPACE, LOG_TIME, TOKEN, WAIT, add_cluster, make_hub, managed_objects, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager
from clusterpulse_core.serde import loads

CLUSTERPULSE = str(Path(sys.executable).parent / "clusterpulse")
COLLECT_INTERVAL = 1.0
PROBE = IngesterSettings().reconnect_probe_interval
#: Backoff steps the agent has taken when the ingester comes back: the next nominal delay is 2^4 s.
FAILED_SESSIONS = 4


class Agent:
    """``clusterpulse agent`` as a subprocess against the ingester on ``port``."""

    def __init__(self, tmp: Path, managed: Any, port: int) -> None:
        kubeconfig = managed.write_kubeconfig(tmp / "agent.kubeconfig", token=TOKEN)
        config = tmp / "agent.toml"
        config.write_text(
            "\n".join(
                [
                    "[clusterpulse]",
                    'plugins = ["cluster", "ingester"]',
                    'metrics_bind_address = "0"',
                    'health_probe_bind_address = "0"',
                    "[plugins.ingester]",
                    'cluster_name = "edge"',
                    f'ingester_address = "127.0.0.1:{port}"',
                    f'collector_token = "{TOKEN}"',
                    "tls_enabled = false",  # the hub below talks plaintext: this test is about replay, not transport
                    f"collect_interval = {COLLECT_INTERVAL}",
                    "heartbeat_interval = 1.0",
                    "ack_timeout = 10.0",
                    "flush_timeout = 2.0",
                    "buffer_size = 20",
                ]
            )
            + "\n"
        )
        self.log_path = tmp / "agent.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [CLUSTERPULSE, "--config", str(config), "agent", "--kubeconfig", str(kubeconfig)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def times(self, pattern: str) -> list[float]:
        """Wall times (epoch seconds) of the log lines matching ``pattern``."""
        out = []
        for line in self.log().splitlines():
            stamp = LOG_TIME.match(line)
            if stamp and re.search(pattern, line):
                out.append(datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
        return out

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture
def push_hub(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Iterator[tuple[Manager, Any, int]]:
    """A Manager with the ingester and a push ClusterConnection ``edge``; (manager, managed cluster, port)."""
    hub = make_hub(kube_api)
    managed = kube_api(objects=managed_objects("edge-1", "edge-2"), require_token=TOKEN)
    port = free_port()
    add_cluster(hub, "edge", managed.url, collectionMode="push", ingesterAddress=f"127.0.0.1:{port}")
    # The collector token the hub would mint for the cluster, with a known value for the agent.
    hub.create(collector_token.secret_object(HUB_NAMESPACE, "edge", {collector_token.TOKEN_KEY: TOKEN}))
    config_file = write_config(
        tmp_path / "hub.toml",
        redis_url,
        enabled=("redis", "cluster", "ingester"),
        plugins={
            "ingester": {"bind_address": "127.0.0.1", "port": port, "stop_grace": 2.0, "tls_enabled": False},
            "cluster": {"ingester_tls_enabled": False},
        },
    )
    config, host = load(str(config_file), env={})
    manager = Manager(build_runtime(config, host, hub=KubeClient(hub.api_client())), identity="replay-test")
    manager.start()
    try:
        yield manager, managed, port
    finally:
        manager.stop()


def _series(client: redis.Redis, node: str) -> list[tuple[int, float]]:
    """(score, the sample's own collection time) of every sample of a node's time series."""
    out = []
    for member, score in client.zrange(f"cluster:edge:node:{node}:metrics", 0, -1, withscores=True):
        stamp = datetime.fromisoformat(str(loads(member)["timestamp"]).replace("Z", "+00:00"))
        out.append((int(score), stamp.timestamp()))
    return out


def test_a_replay_after_an_ingester_outage_keeps_its_time_and_the_agent_reconnects_soon(
    push_hub: tuple[Manager, Any, int], redis_url: str, tmp_path: Path
) -> None:
    manager, managed, port = push_hub
    client = redis.Redis.from_url(redis_url)
    agent = Agent(tmp_path, managed, port)
    try:
        eventually(lambda: agent.times("Registered with ingester"), "the agent to register", WAIT)
        registered = agent.times("Registered with ingester")[0]
        eventually(
            lambda: len([s for _, s in _series(client, "edge-1") if s >= registered - 1]) >= 2,
            "the first pushed batches",
            WAIT,
        )
        server = manager.runtime.plugins.plugin("ingester").server  # type: ignore[attr-defined]
        server.stop()
        down_at = time.time()
        eventually(
            lambda: len(agent.times("session ended")) >= FAILED_SESSIONS,
            f"{FAILED_SESSIONS} failed sessions (a long backoff step)",
            WAIT * 2,
        )
        server.start()
        up_at = time.time()
        eventually(
            lambda: [t for t in agent.times("Registered with ingester") if t >= up_at - 0.01],
            "the agent to register again",
            WAIT * 2,
        )
        reconnected_after = min(t for t in agent.times("Registered with ingester") if t >= up_at - 0.01) - up_at
        eventually(lambda: any(stamp > up_at for _, stamp in _series(client, "edge-1")), "the replay", WAIT)

        outage = [(score, stamp) for score, stamp in _series(client, "edge-1") if down_at <= stamp <= up_at]
        wrong = [(score, stamp) for score, stamp in _series(client, "edge-1") if score != int(stamp)]
        bound = 4 * PROBE  # a jittered probe step (<= 1.5 probes) + its timeout (1) + the reconnect jitter (<= 1)
        print(
            f"\ningester down {up_at - down_at:.1f}s: {len(outage)} batches replayed, their scores "
            f"{sorted({s for s, _ in outage})}; samples whose score is not their collection time: {len(wrong)}; "
            f"agent registered {reconnected_after:.1f}s after the ingester listened again (bound {bound:g}s)"
        )
        assert len(outage) >= FAILED_SESSIONS - 1
        assert not wrong
        assert len({score for score, _ in outage}) >= len(outage) - 1  # one per collect interval, not one for all
        assert reconnected_after < bound
    finally:
        agent.stop()
        client.close()


def test_a_batch_that_can_never_be_stored_is_rejected_not_retried(push_hub: tuple[Manager, Any, int]) -> None:
    _, _, port = push_hub
    depth = 100_000
    batch = pb.MetricsBatch(cluster_name="edge", batch_id="poison")
    batch.custom_resources.add(source_id="clusterpulse/deep").resources.add(
        id="x", name="x", namespace="default", values_json=b'{"v": ' + b"[" * depth + b"]" * depth + b"}"
    )
    good = pb.MetricsBatch(cluster_name="edge", batch_id="good")
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        requests = iter(
            [
                pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN, version="test")),
                pb.ConnectRequest(metrics=batch),
                pb.ConnectRequest(metrics=good),
            ]
        )
        responses = pb_grpc.CollectorServiceStub(channel).Connect(
            requests, metadata=[("authorization", f"Bearer {TOKEN}")], timeout=WAIT
        )
        acks = {r.ack.batch_id: r.ack for r in responses if r.WhichOneof("payload") == "ack"}
    print(f"\nvalues_json nested {depth} deep: success={acks['poison'].success} {acks['poison'].error!r}")
    assert not acks["poison"].success
    assert acks["poison"].error.startswith(REJECTED), acks["poison"].error
    assert "custom_resources[0].resources[0].values_json" in acks["poison"].error
    assert acks["good"].success
