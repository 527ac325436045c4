"""The ``agent`` field of the statuses the ingester stores: the hub's decision, with the stream live."""

from __future__ import annotations

from datetime import UTC, datetime

from clusterpulse_cluster.fleet import fleet_cluster
from clusterpulse_ingester.agents import AgentBook, hub_view, streaming_status
from clusterpulse_model import AgentStatus, ClusterStatusRecord
from clusterpulse_model.pieces import ClusterDeletion, ClusterStatusPiece

from clusterpulse_core.serde import unstructure

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _cc(mode: str | None, agent: object = None) -> dict[str, object]:
    spec = {"endpoint": "https://x"} | ({"collectionMode": mode} if mode else {})
    return {"spec": spec, **({"status": {"agent": agent}} if agent is not None else {})}


def _view(obj: dict[str, object]) -> AgentStatus | None:
    """The hub's decision for a ClusterConnection, read through the cluster plugin's typed fleet view."""
    return hub_view(fleet_cluster(obj))


def test_hub_view_reads_status_agent_of_push_clusters_only() -> None:
    assert _view(_cc(None)) is None
    assert _view(_cc("pull", {"deployed": True, "version": "1.0"})) is None
    assert _view(_cc("push")) == AgentStatus()
    assert _view(
        _cc("push", {"deployed": True, "version": "1.2.0", "connected": False, "lastHeartbeat": "2026-01-01T00:00:00Z"})
    ) == AgentStatus(True, "1.2.0")
    # Hostile or broken status: read as "not installed by the hub", never an error.
    assert _view(_cc("push", {"deployed": "yes", "version": ["x"]})) == AgentStatus()
    assert _view(_cc("push", "not a mapping")) == AgentStatus()
    assert _view({"spec": "nope"}) is None


def test_streaming_status_keeps_the_hubs_version_only_for_its_own_agent() -> None:
    assert streaming_status(None, "0.9", NOW) is None
    assert streaming_status(AgentStatus(True, "1.2.0"), "0.9", NOW) == AgentStatus(True, "1.2.0", True, NOW)
    assert streaming_status(AgentStatus(False, "old"), "0.9", NOW) == AgentStatus(False, "0.9", True, NOW)
    # The Redis form comes from the one converter: the same keys as the pull path's statuses.
    record = ClusterStatusRecord("healthy", "Collector push active", NOW, streaming_status(AgentStatus(), "0.9", NOW))
    assert unstructure(record)["agent"] == {
        "deployed": False,
        "version": "0.9",
        "connected": True,
        "last_heartbeat": "2026-01-02T03:04:05Z",
    }


def test_book_follows_the_hubs_status_writes() -> None:
    book = AgentBook()
    # Never heard of: an agent the hub did not install.
    assert book.status("edge", "0.9", NOW) == AgentStatus(False, "0.9", True, NOW)
    book.learn("edge", AgentStatus(False, ""))  # registration: status.agent absent
    # The hub installs the agent during a pull fallback; its status write reaches the book.
    book.store(
        [
            ClusterStatusPiece(
                "edge",
                ClusterStatusRecord("healthy", "Cluster is reachable", NOW, AgentStatus(True, "2.0.0", False, NOW)),
            )
        ]
    )
    assert book.status("edge", "0.9", NOW) == AgentStatus(True, "2.0.0", True, NOW)
    # A pull cluster's statuses have no agent; neither do the ingester's for it.
    book.store([ClusterStatusPiece("lab", ClusterStatusRecord("healthy", "Cluster is reachable", NOW))])
    assert book.status("lab", "0.9", NOW) is None
    book.store([ClusterDeletion("edge")])
    assert book.status("edge", "0.9", NOW) == AgentStatus(False, "0.9", True, NOW)
