"""Agent deployment while an agent is connected (the connection comes through ``clusterpulse_agent_connection``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import three_node
from cluster_support import Harness
from clusterpulse_ingester import hookspecs as ingester_hookspecs
from clusterpulse_model import AgentConnection

from clusterpulse_core import hookimpl
from clusterpulse_core.hookspecs import HookDeclarer

WRITES = ("POST", "PUT", "PATCH", "DELETE")
DEPLOYMENT = "/apis/apps/v1/namespaces/clusterpulse-system/deployments/clusterpulse-collector"


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


def _connect(agents: Agents, harness: Harness, version: str = "0.1.0") -> None:
    now = harness.clock.now
    agents.connected["edge"] = AgentConnection("edge", version, now - timedelta(minutes=1), now)


def test_an_agent_the_hub_did_not_install_is_left_alone(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    agents = Agents()
    harness = make_harness(extra={"agents": agents})
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("edge", cluster.url, token=three_node.TOKEN, collectionMode="push", ingesterAddress="hub:9443")
    _connect(agents, harness)
    cluster.clear_requests()
    assert harness.reconcile("edge").ok
    assert cluster.requests == []
    agent = harness.cr("edge")["status"]["agent"]
    assert agent["deployed"] is False and agent["connected"] is True

    agents.connected.clear()  # it goes away: the hub installs its own
    assert harness.reconcile("edge").ok
    assert cluster.get("apps/v1", "deployments", "clusterpulse-collector", "clusterpulse-system") is not None
    assert harness.cr("edge")["status"]["agent"]["deployed"] is True


def test_a_connected_agent_is_upgraded_and_an_unreachable_api_is_no_error(
    make_harness: Callable[..., Harness], kube_api: Callable[..., Any]
) -> None:
    agents = Agents()
    harness = make_harness(extra={"agents": agents})
    cluster = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    harness.add("edge", cluster.url, token=three_node.TOKEN, collectionMode="push", ingesterAddress="hub:9443")
    assert harness.reconcile("edge").ok  # not connected: deployed
    _connect(agents, harness)
    cluster.clear_requests()
    for _ in range(3):
        harness.clock.advance(1)
        _connect(agents, harness)
        assert harness.reconcile("edge").ok
    assert cluster.requests == [], "a connected agent of the wanted version costs no call"

    cr = harness.cr("edge")
    cr["spec"]["collectorVersion"] = "2.0.0"
    harness.hub.update(cr)
    assert harness.reconcile("edge").ok
    writes = [(m, p) for m, p, _ in cluster.requests if m in WRITES]
    assert writes == [("PATCH", DEPLOYMENT)]
    assert harness.cr("edge")["status"]["agent"]["version"] == "2.0.0"

    cluster.stop()
    cr = harness.cr("edge")
    cr["spec"]["collectorVersion"] = "2.0.1"
    harness.hub.update(cr)
    outcome = harness.reconcile("edge")
    assert outcome.ok, outcome.detail
    status = harness.cr("edge")["status"]
    assert status["phase"] == "Connected"
    # Not applied: the status keeps the version last deployed, so the next reconcile tries again.
    assert status["agent"] == {
        "deployed": True,
        "version": "2.0.0",
        "connected": True,
        "lastHeartbeat": status["agent"]["lastHeartbeat"],
    }
    cluster.start()
    harness.clock.advance(120)  # the breaker half-opens
    _connect(agents, harness)
    assert harness.reconcile("edge").ok
    assert (
        cluster.get("apps/v1", "deployments", "clusterpulse-collector", "clusterpulse-system")["spec"]["template"][
            "spec"
        ]["containers"][0]["image"]
        == "quay.io/clusterpulse/clusterpulse:2.0.1"
    )
    assert harness.cr("edge")["status"]["agent"]["version"] == "2.0.1"
