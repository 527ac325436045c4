"""Push mode end to end: a real Manager with the ingester, real ``clusterpulse agent`` processes, real Redis.

Each agent's "own" cluster is a kube_api emulator (reached with ``--kubeconfig``); the hub is
another emulator. The pull path collects the same emulated cluster under another name, so the
two ways of collecting can be compared key by key.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import redis
from clusterpulse_ingester.plugin import IngesterPlugin
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_model.pieces import ClusterMetricsPiece, ClusterSpecPiece
from clusterpulse_testing.kube_api_util import ApiError
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend
from clusterpulse_testing.servers import free_port
from push_support import (
    CC_API,
    HUB_NAMESPACE,
    SERVER_NAME,
    TOKEN,
    WAIT,
    AgentProcess,
    GoAgent,
    Stream,
    agent_connection,
    cluster_connection,
    collector_secret,
    hub_ca,
    hub_tls_channel,
    managed_objects,
    metric_source,
    secret,
    workload_objects,
    write_config,
)

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager
from clusterpulse_core.serde import dumps, loads

MANAGED_TOKEN = "managed-cluster-token"
#: A stored health message (docs/readers.md#r7-health).
HEALTH_MESSAGE = re.compile(r"(?:Cluster is healthy|Issues: [^()]+)")
INTERVAL = 0.5


@attrs.define
class PushWorld:
    """The hub Manager, its Redis, the managed cluster emulator and a way to start agents."""

    manager: Manager
    recording: RecordingBackend
    redis: redis.Redis
    hub: Any
    managed: Any
    port: int
    tmp: Path
    agents: list[AgentProcess] = attrs.field(factory=list)

    @property
    def ingester(self) -> IngesterPlugin:
        plugin = self.manager.runtime.plugins.plugin("ingester")
        assert isinstance(plugin, IngesterPlugin)
        return plugin

    def start_agent(
        self, cluster: str = "edge", token: str = TOKEN + "edge", managed: Any = None, **settings: Any
    ) -> AgentProcess:
        kubeconfig = (managed or self.managed).write_kubeconfig(self.tmp / f"{cluster}.kubeconfig", token=MANAGED_TOKEN)
        metrics_port = free_port()
        ca_file = self.tmp / "ingester-ca.crt"
        ca_file.write_text(hub_ca(self.hub))
        section = {
            "cluster_name": cluster,
            "ingester_address": f"127.0.0.1:{self.port}",
            "collector_token": token,
            "tls_ca": str(ca_file),
            "tls_server_name": SERVER_NAME,
            "collect_interval": INTERVAL,
            "heartbeat_interval": 1.0,
            "ack_timeout": 10.0,
            "flush_timeout": 5.0,
            **settings,
        }
        config = write_config(
            self.tmp / f"agent-{len(self.agents)}.toml",
            ["cluster", "metricsource", "ingester"],
            {"ingester": section},
            core={"metrics_bind_address": f"127.0.0.1:{metrics_port}"},
        )
        agent = AgentProcess(config, kubeconfig, metrics_port, self.tmp / f"agent-{len(self.agents)}.log")
        self.agents.append(agent)
        return agent

    def json(self, key: str) -> Any:
        raw = self.redis.get(key)
        return None if raw is None else loads(raw)

    def cr(self, name: str) -> dict[str, Any]:
        obj = self.hub.get(CC_API, "clusterconnections", name, HUB_NAMESPACE)
        assert obj is not None
        return obj


@pytest.fixture
def world(
    hub: Any, kube_api: Callable[..., Any], redis_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[PushWorld]:
    """``@pytest.mark.parametrize("world", [{...}], indirect=True)`` adds settings to ``[plugins.redis]``."""
    managed = kube_api(objects=managed_objects(), require_token=MANAGED_TOKEN)
    hub.create(secret("pulled-token", MANAGED_TOKEN))
    hub.create(cluster_connection("pulled", managed.url))
    port = free_port()
    config_file = write_config(
        tmp_path / "hub.toml",
        ["redis", "cluster", "metricsource", "ingester"],
        {
            "redis": {"url": redis_url, **getattr(request, "param", {})},
            "cluster": {"agent_silence_limit": 5.0},
            "ingester": {"bind_address": "127.0.0.1", "port": port, "stop_grace": 2.0},
        },
    )
    recording = RecordingBackend()
    config, host = load(str(config_file), env={}, extra_plugins={"recording": BackendPlugin(recording)})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    manager = Manager(runtime, identity="push-test")
    manager.start()
    world = PushWorld(manager, recording, redis.Redis.from_url(redis_url), hub, managed, port, tmp_path)
    try:
        yield world
    finally:
        for agent in world.agents:
            agent.stop()
        manager.stop()
        world.redis.close()


def _normalise(value: Any, cluster: str) -> Any:
    """Drop what legitimately differs between two collections of one cluster: times and the name."""
    if isinstance(value, dict):
        return {
            k: _normalise(v, cluster)
            for k, v in value.items()
            if k
            not in {
                "timestamp",
                "last_check",
                "collectedAt",
                "collected_at",
                "computedAt",
                "last_update",
                "collection_time_ms",
                "lastCollectionTime",
                "durationMs",
            }
        }
    if isinstance(value, list):
        return [_normalise(v, cluster) for v in value]
    if isinstance(value, str):
        return re.sub(r"\b(pulled|edge)\b", "<cluster>", value)
    return value


#: What our agent's batch does not carry even with the protocol extension (docs/push-mode.md,
#: "What each agent delivers"): left out on purpose (annotations are large; no reader shows the rest).
NODE_PULL_ONLY = {"annotations", "taints", "external_ip", "images_count", "volumes_attached"}
#: Cluster info: ``api_url`` is each ClusterConnection's own endpoint (two objects, two endpoints by
#: construction); ``console_url`` the agent derives from the Route only.
INFO_PULL_ONLY = {"api_url", "console_url"}


def _value(world: PushWorld, key: str) -> Any:
    kind = world.redis.type(key).decode()
    if kind == "string":
        return loads(world.redis.get(key))
    if kind == "hash":
        out = {}
        for field, raw in world.redis.hgetall(key).items():
            try:
                out[field.decode()] = loads(raw)
            except ValueError:
                out[field.decode()] = raw.decode()
        return out
    if kind == "set":
        return sorted(m.decode() for m in world.redis.smembers(key))
    if kind == "zset":
        return [loads(m) for m in world.redis.zrange(key, -1, -1)]
    return kind


def _comparable(key: str, value: Any) -> Any:
    if key == "info":
        value = {k: v for k, v in value.items() if k not in INFO_PULL_ONLY}
    if re.fullmatch(r"node:[^:]+", key) and isinstance(value.get("current"), dict):
        value = {**value, "current": {k: v for k, v in value["current"].items() if k not in NODE_PULL_ONLY}}
    return _normalise(value, "")


def _cluster_keys(world: PushWorld, cluster: str) -> set[str]:
    return {k.decode().split(":", 2)[2] for k in world.redis.keys(f"cluster:{cluster}:*")}


def _fields_differing(a: Any, b: Any, prefix: str = "") -> set[str]:
    """The fields (``current.conditions``: one level into hashes) whose values differ; ``<value>`` for the whole."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return set() if a == b else {prefix.rstrip(".") or "<value>"}
    out: set[str] = set()
    for key in a.keys() | b.keys():
        if a.get(key, KeyError) == b.get(key, KeyError):
            continue
        if not prefix and isinstance(a.get(key), dict) and isinstance(b.get(key), dict):
            out |= _fields_differing(a[key], b[key], key + ".")
        else:
            out.add(prefix + key)
    return out


def _differences(world: PushWorld, pushed: str, pulled: str) -> dict[str, set[str]]:
    """Every key the readers read of two collections of one cluster, compared: key suffix -> differing fields
    (``<absent>`` for a key only one of them has). Times, names and each object's own endpoint are left out."""
    # The spec (and its labels, which a test's touch sets) differ by construction: endpoint, mode.
    keys_pushed, keys_pulled = _cluster_keys(world, pushed) - {"labels"}, _cluster_keys(world, pulled) - {"labels"}
    out: dict[str, set[str]] = {k: {"<absent>"} for k in keys_pushed ^ keys_pulled}
    for suffix in sorted((keys_pushed & keys_pulled) - {"spec", "status"}):
        fields = _fields_differing(
            _comparable(suffix, _value(world, f"cluster:{pushed}:{suffix}")),
            _comparable(suffix, _value(world, f"cluster:{pulled}:{suffix}")),
        )
        if fields:
            out[suffix] = fields
    a, b = world.json(f"cluster:{pushed}:status"), world.json(f"cluster:{pulled}:status")
    if (a["health"], a["message"]) != (b["health"], b["message"]):
        out["status"] = {"health", "message"}
    return out


def _node_names() -> list[str]:
    return [o["metadata"]["name"] for o in managed_objects() if o["kind"] == "Node"]


#: What the readers see differently for a Go agent's push cluster than for the same cluster pulled: exactly
#: docs/compatibility.md#w3 (a Go agent's batch has upstream fields only; the rest is the same).
GO_AGENT_DIFFERENCES: dict[str, set[str]] = {
    **{
        key: {"<absent>"}
        for key in ("pods", "deployments", "services", "statefulsets", "daemonsets", "resource_metadata")
    },  # R3 lists: not in the upstream messages
    "metrics": {"services", "statefulsets", "daemonsets", "pvcs"},  # R1 counts the upstream proto reserved
    **{f"node:{n}:conditions": {"<absent>"} for n in _node_names()},  # R2
    **{f"node:{n}": {"current.conditions", "current.creation_timestamp"} for n in _node_names()},  # R2, R6
}


def test_pull_and_push_of_one_cluster_store_the_same_state_and_metricsources_follow_edits(world: PushWorld) -> None:
    agent = world.start_agent()
    eventually(lambda: world.json("cluster:edge:metrics"), "a pushed batch", timeout=30)
    eventually(lambda: world.json("cluster:pulled:metrics"), "the pull reconcile", timeout=30)
    # One cluster, two ways: the same health verdict (docs/readers.md#r7-health); the push one by the ingester.
    pushed_status, pulled_status = world.json("cluster:edge:status"), world.json("cluster:pulled:status")
    assert pushed_status["agent"]["connected"] is True and "agent" not in pulled_status
    assert (pushed_status["health"], pushed_status["message"]) == (pulled_status["health"], pulled_status["message"])
    assert HEALTH_MESSAGE.fullmatch(pulled_status["message"])

    # Our agent's batches (with the protocol extension) write every key a pull writes, with the same values.
    assert {"node:worker-1:conditions", "pods", "resource_metadata"} <= _cluster_keys(world, "edge")
    assert _differences(world, "edge", "pulled") == {}
    # Conditions and the real age arrive through the extension.
    node = _value(world, "cluster:edge:node:worker-2")["current"]
    assert (
        node["conditions"]
        and node["creation_timestamp"] == _value(world, "cluster:pulled:node:worker-2")["current"]["creation_timestamp"]
    )
    # The agent sends no API URL: the hub stores the ClusterConnection's endpoint, as pull does.
    assert world.json("cluster:edge:info")["api_url"] == world.cr("edge")["spec"]["endpoint"]

    # A MetricSource created, then edited, while the agent stays connected.
    connection = agent_connection(world.manager.runtime.plugins, "edge")
    assert connection is not None
    world.hub.create(metric_source("deploys", "replicas * 2"))
    resources_key = "cluster:edge:custom:clusterpulse/deploys:resources"

    def values() -> dict[str, Any]:
        stored = (world.json(resources_key) or {}).get("resources") or []
        return {r["_name"]: r["values"] for r in stored}

    eventually(
        lambda: values().get("web", {}).get("doubled") == 4, "the agent's first MetricSource values", timeout=WAIT
    )
    # Namespace patterns are applied by the agent: only app-* Deployments.
    assert values() == {"web": {"replicas": 2, "doubled": 4}, "api": {"replicas": 3, "doubled": 6}}
    source = world.hub.get(CC_API, "metricsources", "deploys", HUB_NAMESPACE)
    source["spec"]["computed"][0]["expression"] = "replicas * 10"
    world.hub.update(source)
    eventually(lambda: values().get("api", {}).get("doubled") == 30, "the edited expression's values", timeout=WAIT)
    aggregations = world.json("cluster:edge:custom:clusterpulse/deploys:aggregations")
    assert aggregations["values"]["total"] == 50.0
    after = agent_connection(world.manager.runtime.plugins, "edge")
    assert after is not None and after.connected_at == connection.connected_at  # no reconnect
    assert agent.metric("clusterpulse_agent_config_updates_total") >= 3  # at register, create, edit
    assert agent.output().count("Registered with ingester") == 1
    assert agent.stop() == 0


def _received(world: PushWorld, cluster: str = "edge") -> list[Any]:
    return [p.metrics.timestamp for p in world.recording.of(ClusterMetricsPiece) if p.cluster == cluster]


def _totals(agent: AgentProcess) -> dict[str, int]:
    found = re.search(r"agent stopped: (.*)$", agent.output(), re.M)
    assert found, agent.output()[-3000:]
    return {k: int(v) for k, v in (item.split("=") for item in found.group(1).split())}


@pytest.mark.parametrize(("buffer_size", "outage_cycles"), [(10, 4), (2, 6)])
def test_batches_collected_while_the_ingester_is_away(world: PushWorld, buffer_size: int, outage_cycles: int) -> None:
    agent = world.start_agent(buffer_size=buffer_size)
    eventually(lambda: len(_received(world)) >= 2, "the first batches", timeout=WAIT)
    server = world.ingester.server
    assert server is not None
    server.stop()
    collected = agent.metric("clusterpulse_agent_batches_collected_total")
    eventually(
        lambda: agent.metric("clusterpulse_agent_batches_collected_total") >= collected + outage_cycles,
        f"{outage_cycles} collections during the outage",
        timeout=30,
    )
    server.start()
    eventually(
        lambda: (
            agent.metric("clusterpulse_agent_registered") == 1
            and agent.metric("clusterpulse_agent_buffered_batches") == 0
        ),
        "the buffer to drain",
        timeout=30,
    )
    assert agent.stop() == 0
    totals = _totals(agent)
    received = _received(world)
    # Oldest first, each with its own collected_at; every batch either arrived or was counted as dropped.
    assert received == sorted(received) and len(set(received)) == len(received)
    assert totals["buffered"] == 0
    assert totals["acked"] == len(received)
    assert totals["collected"] == totals["acked"] + totals["dropped"]
    if outage_cycles <= buffer_size:
        assert totals["dropped"] == 0
    else:
        assert totals["dropped"] >= outage_cycles - buffer_size - 1
        # The dropped ones are the oldest of the outage: one gap, then consecutive batches.
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(received)]
        assert max(gaps) >= totals["dropped"] * INTERVAL * 0.8


def test_wrong_token_agent_stores_nothing_and_keeps_trying(world: PushWorld) -> None:
    agent = world.start_agent(token="not-the-token")
    eventually(lambda: "UNAUTHENTICATED" in agent.output(), "the refusal in the agent's log", timeout=30)
    assert agent.process.poll() is None
    assert world.redis.keys("cluster:edge:metrics") == []
    assert _received(world) == []
    assert agent.stop() == 0


def test_push_status_and_fallback_to_pull(world: PushWorld) -> None:
    world.hub.create(secret("fallback-token", MANAGED_TOKEN))
    world.hub.create(collector_secret("fallback", TOKEN + "fallback"))
    world.hub.create(cluster_connection("fallback", world.managed.url, push=True, ingester=f"127.0.0.1:{world.port}"))
    eventually(
        lambda: "push agent not connected" in (world.cr("fallback").get("status") or {}).get("message", ""),
        "the pull fallback without an agent",
        timeout=WAIT,
    )
    assert world.cr("fallback")["status"]["collectorStatus"] == {"connected": False}

    agent = world.start_agent("fallback", token=TOKEN + "fallback")
    eventually(
        lambda: agent_connection(world.manager.runtime.plugins, "fallback"), "the agent to register", timeout=WAIT
    )

    def touch() -> None:  # a spec change makes the manager reconcile now instead of in 30 s
        obj = world.cr("fallback")
        obj["spec"]["labels"] = {"touched": str(len(obj["spec"].get("labels") or {}) + 1 + len(str(obj)))}
        world.hub.update(obj)

    # No touch: the registration itself queues the cluster (its interval is 30 s, the wait 15 s).
    status = eventually(
        lambda: (s := world.cr("fallback").get("status") or {}).get("collectorStatus", {}).get("connected") and s,
        "push active in the status, soon after the registration",
        timeout=15,
    )
    assert status["message"].startswith("Collector push active (agent ")
    assert status["collectorStatus"]["version"] and status["collectorStatus"]["lastHeartbeat"]
    assert agent.stop() == 0
    eventually(
        lambda: agent_connection(world.manager.runtime.plugins, "fallback") is None, "the stream to close", timeout=WAIT
    )
    touch()
    status = eventually(
        lambda: "collecting by pull" in (s := world.cr("fallback").get("status") or {}).get("message", "") and s,
        "the fallback in the status",
        timeout=WAIT,
    )
    assert status["phase"] == "Connected"
    assert "push agent not connected: collecting by pull" in status["message"]
    assert status["collectorStatus"]["connected"] is False


def test_sigterm_makes_one_bounded_flush_attempt_and_exits_zero(world: PushWorld) -> None:
    agent = world.start_agent(flush_timeout=2.0)
    eventually(lambda: _received(world), "the first batch", timeout=WAIT)
    server = world.ingester.server
    assert server is not None
    server.stop()
    collected = agent.metric("clusterpulse_agent_batches_collected_total")
    eventually(
        lambda: (
            agent.metric("clusterpulse_agent_buffered_batches") >= 2
            and agent.metric("clusterpulse_agent_batches_collected_total") >= collected + 2
        ),
        "buffered batches",
        timeout=WAIT,
    )
    started = time.monotonic()
    assert agent.stop() == 0
    assert time.monotonic() - started < 2.0 + 8.0  # flush_timeout plus generous process start/stop slack
    assert "final flush incomplete" in agent.output()
    assert _totals(agent)["buffered"] >= 2


def _touch(world: PushWorld, name: str) -> None:
    """A spec change: the manager reconciles now instead of at the next requeue.

    Read-modify-write races the manager's status patches (a 409): read again, a bounded few times.
    """
    for attempt in range(5):
        obj = world.cr(name)
        obj["spec"]["labels"] = {"touched": str(time.monotonic_ns())}
        try:
            world.hub.update(obj)
            return
        except ApiError as exc:
            if exc.code != 409 or attempt == 4:
                raise


def _status(world: PushWorld, name: str) -> dict[str, Any]:
    return world.cr(name).get("status") or {}


def test_a_frozen_agent_is_pulled_after_the_silence_limit_and_push_resumes(
    world: PushWorld, kube_api: Callable[..., Any]
) -> None:
    """A real agent frozen with SIGSTOP: its stream stays open but says nothing (docs/compatibility.md#c3)."""
    cluster = kube_api(objects=managed_objects(), require_token=MANAGED_TOKEN)

    def pulls() -> int:  # the hub's own node listings (the agent's reads carry its User-Agent)
        return sum(
            1
            for r in cluster.callers
            if r.path == "/api/v1/nodes" and not r.user_agent.startswith("clusterpulse-agent/")
        )

    def reconciles() -> int:
        return sum(1 for p in world.recording.of(ClusterSpecPiece) if p.cluster == "quiet")

    world.hub.create(secret("quiet-token", MANAGED_TOKEN))
    world.hub.create(collector_secret("quiet", TOKEN + "quiet"))
    world.hub.create(cluster_connection("quiet", cluster.url, push=True, ingester=f"127.0.0.1:{world.port}"))
    eventually(
        lambda: "push agent not connected" in _status(world, "quiet").get("message", ""), "the first pull", timeout=WAIT
    )
    agent = world.start_agent("quiet", token=TOKEN + "quiet", managed=cluster, ack_timeout=60.0)
    eventually(lambda: agent_connection(world.manager.runtime.plugins, "quiet"), "the agent to register", timeout=WAIT)

    # Streaming: reconciles find the agent live and leave the cluster alone.
    cluster.clear_requests()
    _touch(world, "quiet")
    status = eventually(
        lambda: (s := _status(world, "quiet")).get("collectorStatus", {}).get("connected") and s,
        "push active in the status",
        timeout=WAIT,
    )
    assert re.fullmatch(r"Collector push active \(agent \S+, last heartbeat \S+Z\)", status["message"])
    # Its health is the verdict of the agent's batches (managed_objects' NotReady worker-2: degraded).
    assert status["phase"] == "Connected" and status["health"] == "degraded"
    before = reconciles()
    eventually(lambda: reconciles() > before, "a reconcile while the agent streams (silence limit 5 s)", timeout=20)
    assert pulls() == 0
    # Redis says what the status says, agent included, from the ingester's writes.
    stored = eventually(
        lambda: (v := world.json("cluster:quiet:status")) and v.get("agent", {}).get("connected") and v,
        "an ingester status write with the agent",
        timeout=WAIT,
    )
    crd_agent = _status(world, "quiet")["agent"]
    assert crd_agent["deployed"] is True  # installed by the hub while no agent was connected
    assert HEALTH_MESSAGE.fullmatch(stored["message"])
    assert {k: stored["agent"][k] for k in ("deployed", "version", "connected")} == {
        k: crd_agent[k] for k in ("deployed", "version", "connected")
    }
    assert stored["agent"]["last_heartbeat"] >= status["collectorStatus"]["lastHeartbeat"]

    # Frozen: the TCP stream stays open, nothing arrives; past the limit the hub pulls.
    os.kill(agent.process.pid, signal.SIGSTOP)
    try:
        status = eventually(
            lambda: "silent since" in (s := _status(world, "quiet")).get("message", "") and s,
            "the fallback to pull",
            timeout=30,
        )
        assert agent_connection(world.manager.runtime.plugins, "quiet") is not None  # still connected, silent
        assert status["phase"] == "Connected"
        assert re.fullmatch(
            HEALTH_MESSAGE.pattern + r" \(push agent \S+ silent since \S+Z: collecting by pull\)", status["message"]
        )
        assert status["collectorStatus"]["connected"] is False
        eventually(lambda: pulls() > 0, "the hub's own node listing", timeout=WAIT)
        fallback = eventually(
            lambda: (v := world.json("cluster:quiet:status")) and v.get("agent", {}).get("connected") is False and v,
            "the pull's Redis status",
            timeout=WAIT,
        )
        assert fallback["agent"]["connected"] is False
    finally:
        os.kill(agent.process.pid, signal.SIGCONT)

    # Thawed: batches flow on the same stream, the status says push again and pulls stop.
    eventually(
        lambda: (v := world.json("cluster:quiet:status")) and v["agent"]["connected"],
        "the ingester's status after the thaw",
        timeout=WAIT,
    )
    _touch(world, "quiet")
    status = eventually(
        lambda: (s := _status(world, "quiet")).get("collectorStatus", {}).get("connected") and s,
        "push active again",
        timeout=WAIT,
    )
    assert status["message"].startswith("Collector push active (agent ")
    stored = world.json("cluster:quiet:status")
    assert {k: stored["agent"][k] for k in ("deployed", "version", "connected")} == {
        k: status["agent"][k] for k in ("deployed", "version", "connected")
    }
    assert agent.output().count("Registered with ingester") == 1
    assert agent.stop() == 0


def _grouped_source() -> dict[str, Any]:
    """The Deployments MetricSource with a ``groupBy`` aggregation and an ``avg`` (not what a Go agent sends)."""
    source = metric_source("deploys", "replicas * 2")
    spec = source["spec"]
    spec["fields"].append({"name": "ns", "path": ".metadata.namespace", "type": "string"})
    spec["aggregations"] += [
        {"name": "by_ns", "field": "replicas", "function": "sum", "groupBy": "ns"},
        {"name": "mean", "field": "doubled", "function": "avg"},
    ]
    return source


def test_the_hub_aggregates_pushed_resources_with_the_pull_code(world: PushWorld) -> None:
    """A batch with resources gets the hub's aggregations (grouped too); without them, the agent's numbers."""
    world.hub.create(_grouped_source())
    eventually(
        lambda: world.redis.exists("metricsource:clusterpulse:deploys"), "the hub's compiled MetricSource", timeout=WAIT
    )
    stream = Stream(world.port, TOKEN + "edge", hub_tls_channel(world.hub, world.port))
    try:
        stream.register("edge", TOKEN + "edge")
        batch = pb.MetricsBatch(cluster_name="edge", batch_id="with-resources")
        batch.custom_resources.append(
            pb.CustomResourceBatch(
                source_id="clusterpulse/deploys",
                resource_count=2,
                resources=[
                    pb.CustomCollectedResource(
                        id=f"{ns}/{name}",
                        namespace=ns,
                        name=name,
                        values_json=dumps({"replicas": n, "doubled": 2 * n, "ns": ns}),
                    )
                    for ns, name, n in (("app-a", "web", 2), ("app-b", "api", 3))
                ],
                aggregation_values={"total": 999.0},
            )
        )  # what an agent computed is not what is stored
        stream.send(pb.ConnectRequest(metrics=batch))
        assert stream.recv().ack.success
        key = "cluster:edge:custom:clusterpulse/deploys:aggregations"
        assert world.json(key)["values"] == {"total": 10.0, "by_ns": {"app-a": 2.0, "app-b": 3.0}, "mean": 5.0}

        # Resources not sent (a count only): the agent's numeric results are all there is.
        batch = pb.MetricsBatch(cluster_name="edge", batch_id="counts-only")
        batch.custom_resources.append(
            pb.CustomResourceBatch(
                source_id="clusterpulse/deploys", resource_count=5, aggregation_values={"total": 7.0}
            )
        )
        stream.send(pb.ConnectRequest(metrics=batch))
        assert stream.recv().ack.success
        assert world.json(key)["values"] == {"total": 7.0}
    finally:
        stream.close()


def _pulled_with_workloads(world: PushWorld) -> None:
    """The managed cluster gains a Service, StatefulSet, DaemonSet and PVC, and the hub the grouped MetricSource
    once ``pulled`` is Connected (a MetricSource collects from connected clusters); wait until the pull has
    stored them (its counts and the MetricSource's aggregations)."""
    for obj in workload_objects():
        world.managed.create(obj)
    eventually(lambda: _status(world, "pulled").get("phase") == "Connected", "the first pull", timeout=WAIT)
    world.hub.create(_grouped_source())
    _touch(world, "pulled")
    eventually(
        lambda: (
            (world.json("cluster:pulled:metrics") or {}).get("pvcs") == 1
            and world.json("cluster:pulled:daemonsets")
            and world.json("cluster:pulled:custom:clusterpulse/deploys:aggregations")
        ),
        "the pull of the cluster with its workloads and the MetricSource",
        timeout=WAIT,
    )


def test_a_go_agents_push_cluster_differs_from_the_pulled_one_only_as_documented(
    world: PushWorld, tmp_path: Path
) -> None:
    """Issue: the readers' keys of a cluster pushed by a Go agent (upstream fields only) against the same
    cluster pulled: the differences are docs/compatibility.md#w3's, nothing else."""
    _pulled_with_workloads(world)
    go = GoAgent(
        world.port,
        "edge",
        TOKEN + "edge",
        KubeClient(world.managed.api_client(token=MANAGED_TOKEN)),
        tmp_path,
        hub_tls_channel(world.hub, world.port),
    )
    try:
        assert go.push().success
        assert world.json("cluster:edge:status")["agent"]["connected"] is True
        differences = _differences(world, "edge", "pulled")
    finally:
        go.close()
    assert differences == GO_AGENT_DIFFERENCES
    # The MetricSource's grouped aggregations reach Redis for a Go agent too (the hub aggregates).
    aggregations = world.json("cluster:edge:custom:clusterpulse/deploys:aggregations")["values"]
    assert aggregations["by_ns"] == {"app-a": 2.0, "app-b": 3.0}
    # What is absent is left out, never made up (W2): no zero creation time.
    for name in _node_names():
        assert "creation_timestamp" not in _value(world, f"cluster:edge:node:{name}")["current"]
    documented = Path(__file__).resolve().parents[2].joinpath("docs", "compatibility.md").read_text()
    w3 = documented.split("{#w3}", 1)[1].split("\n#### ", 1)[0]
    for word in (
        "conditions",
        "creation_timestamp",
        "services",
        "statefulsets",
        "daemonsets",
        "pvcs",
        "resource_metadata",
        "pods",
        "deployments",
    ):
        assert f"`{word}`" in w3, word


#: Values a reader would show as nonsense: the zero time, an unknown status.
NONSENSE = re.compile(r"^(0001-01-01T00:00:00Z|Unknown|unknown)$")


def _nonsense(value: Any, where: str) -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _nonsense(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _nonsense(v, f"{where}[{i}]")]
    return [f"{where}={value!r}"] if isinstance(value, str) and NONSENSE.match(value) else []


def _reader_pages(world: PushWorld, cluster: str) -> list[str]:
    """What is wrong on the readers' pages of ``cluster`` (docs/readers.md): missing, zero or unknown values."""
    wrong: list[str] = []
    metrics = world.json(f"cluster:{cluster}:metrics") or {}
    for field in (
        "nodes",
        "nodes_ready",
        "namespaces",
        "pods",
        "pods_running",
        "cpu_capacity",
        "cpu_requested",
        "memory_capacity",
        "deployments",
        "services",
        "statefulsets",
        "daemonsets",
        "pvcs",
    ):
        if not metrics.get(field):
            wrong.append(f"metrics.{field}={metrics.get(field)!r}")
    status = world.json(f"cluster:{cluster}:status") or {}
    if not HEALTH_MESSAGE.fullmatch(status.get("message", "")):
        wrong.append(f"status.message={status.get('message')!r}")
    info = world.json(f"cluster:{cluster}:info") or {}
    wrong += [f"info.{k}={info.get(k)!r}" for k in ("api_url", "version") if not info.get(k)]
    for name in _node_names():
        current = (
            _value(world, f"cluster:{cluster}:node:{name}").get("current")
            if world.redis.exists(f"cluster:{cluster}:node:{name}")
            else None
        )
        if not isinstance(current, dict) or not current.get("creation_timestamp"):
            wrong.append(f"node {name}: no value or no age")
        if not world.redis.hlen(f"cluster:{cluster}:node:{name}:conditions"):
            wrong.append(f"node {name}: no conditions")
    for key in (
        "pods",
        "deployments",
        "services",
        "statefulsets",
        "daemonsets",
        "resource_metadata",
        "namespaces",
        "custom:clusterpulse/deploys:resources",
        "custom:clusterpulse/deploys:aggregations",
    ):
        if not world.json(f"cluster:{cluster}:{key}"):
            wrong.append(f"{key}: missing or empty")
    for key in _cluster_keys(world, cluster):
        wrong += _nonsense(_value(world, f"cluster:{cluster}:{key}"), key)
    return wrong


@pytest.mark.parametrize("world", [{"cache_ttl": 60}], indirect=True)
def test_after_cache_ttl_the_readers_see_the_same_for_push_and_pull(world: PushWorld) -> None:
    """With the shortest CACHE_TTL: once every key written before a point has expired unless rewritten, the
    push cluster's keys are the agent's (not left over from a pull) and the readers' pages of both
    clusters hold no missing, zero or unknown value."""
    cache_ttl = world.manager.runtime.config.plugin("redis").cache_ttl
    assert cache_ttl == 60
    _pulled_with_workloads(world)
    agent = world.start_agent()
    eventually(
        lambda: world.json("cluster:edge:custom:clusterpulse/deploys:aggregations"),
        "the agent's batches with the MetricSource",
        timeout=WAIT,
    )
    # A key of its own with the TTL marks the moment: when Redis has expired it, every key written
    # before it has expired too unless it was rewritten since.
    world.redis.set("test:cache-ttl-marker", "1", ex=cache_ttl)
    eventually(lambda: not world.redis.exists("test:cache-ttl-marker"), "CACHE_TTL to pass", timeout=cache_ttl + WAIT)
    assert _reader_pages(world, "edge") == []
    assert _reader_pages(world, "pulled") == []
    assert _differences(world, "edge", "pulled") == {}
    assert agent.stop() == 0
