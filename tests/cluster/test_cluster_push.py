"""Push-mode ClusterConnections (docs/compatibility.md#c3): not pulled while an agent is live, pulled when it is not.

The connection table comes through the ``clusterpulse_agent_connection`` hook; here a small
plugin answers it, so the cluster plugin is tested against the contract, not the ingester.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import attrs
import three_node
from cluster_support import FakeClock, Harness
from clusterpulse_ingester import hookspecs as ingester_hookspecs
from clusterpulse_model import AgentConnection

from clusterpulse_core import hookimpl
from clusterpulse_core.hookspecs import HookDeclarer


class Agents:
    """Answers ``clusterpulse_agent_connection`` from a dict the test fills."""

    def __init__(self) -> None:
        self.connected: dict[str, AgentConnection] = {}

    @hookimpl
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        """Declare the ingester's hooks: this stands in for it (not loaded here)."""
        pluginmanager.add_hookspecs(ingester_hookspecs)

    @hookimpl
    def clusterpulse_agent_connection(self, cluster: str) -> AgentConnection | None:
        return self.connected.get(cluster)


def test_live_agent_means_no_pull_and_silence_or_absence_means_pull(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    agents = Agents()
    clock = FakeClock()
    harness = make_harness(extra={"agents": agents}, clock=clock)
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("edge", cluster.url, token=three_node.TOKEN, collectionMode="push", ingesterAddress="hub:9443")

    connected_at: datetime = clock.now - timedelta(minutes=5)
    agents.connected["edge"] = AgentConnection("edge", "1.2.3", connected_at, clock.now - timedelta(seconds=20))
    cluster.clear_requests()
    outcome = harness.reconcile("edge")
    assert outcome.ok and outcome.requeue_after == 30
    assert cluster.requests == []  # a live agent: nothing is pulled
    status = harness.cr("edge")["status"]
    assert status["phase"] == "Connected" and status["health"] == "healthy"
    assert status["message"] == "Collector push active (agent 1.2.3, last heartbeat 2024-12-31T23:59:40Z)"
    assert status["collectorStatus"] == {"connected": True, "version": "1.2.3", "lastHeartbeat": "2024-12-31T23:59:40Z"}
    assert harness.redis.get("cluster:edge:metrics") is None
    # The CR's health is the verdict of the agent's latest batch (the ingester's stored status).
    agents.connected["edge"] = attrs.evolve(agents.connected["edge"], health="degraded")
    assert harness.reconcile("edge").ok
    assert harness.cr("edge")["status"]["health"] == "degraded"

    clock.advance(120)  # past the 90 s silence limit: pulled, and the status says why
    assert harness.reconcile("edge").ok
    assert cluster.requests != []
    status = harness.cr("edge")["status"]
    assert status["message"] == (
        "Issues: 1 nodes not ready (push agent 1.2.3 silent since 2024-12-31T23:59:40Z: collecting by pull)"
    )
    assert status["collectorStatus"] == {
        "connected": False,
        "version": "1.2.3",
        "lastHeartbeat": "2024-12-31T23:59:40Z",
    }
    assert harness.json("cluster:edge:metrics")["nodes"] == 3

    del agents.connected["edge"]
    assert harness.reconcile("edge").ok
    assert harness.cr("edge")["status"]["message"] == (
        "Issues: 1 nodes not ready (push agent not connected: collecting by pull)"
    )


def test_silence_limit_is_a_setting(make_harness: Callable[..., Harness], kube_api: Callable[..., Any]) -> None:
    agents = Agents()
    clock = FakeClock()
    harness = make_harness(settings={"agent_silence_limit": 10.0}, extra={"agents": agents}, clock=clock)
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("edge", cluster.url, token=three_node.TOKEN, collectionMode="push", ingesterAddress="hub:9443")
    agents.connected["edge"] = AgentConnection("edge", "1.2.3", clock.now, clock.now - timedelta(seconds=20))
    cluster.clear_requests()
    assert harness.reconcile("edge").ok
    assert cluster.requests != []
    assert "silent since" in harness.cr("edge")["status"]["message"]


def test_a_live_agent_is_looked_at_again_when_it_would_count_as_silent(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    agents = Agents()
    clock = FakeClock()
    harness = make_harness(settings={"agent_silence_limit": 10.0}, extra={"agents": agents}, clock=clock)
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("edge", cluster.url, token=three_node.TOKEN, collectionMode="push", ingesterAddress="hub:9443")
    agents.connected["edge"] = AgentConnection("edge", "1.2.3", clock.now, clock.now - timedelta(seconds=2))
    cluster.clear_requests()
    outcome = harness.reconcile("edge")
    # Not at the 30 s interval: just after the 10 s limit would pass, so a fallback is on time.
    assert outcome.ok and outcome.requeue_after == 8.5
    assert [p for _, p, _ in cluster.requests if p == "/api/v1/nodes"] == []
    clock.advance(8.5)
    assert harness.reconcile("edge").ok
    assert "silent since" in harness.cr("edge")["status"]["message"]
    assert any(p == "/api/v1/nodes" for _, p, _ in cluster.requests)
