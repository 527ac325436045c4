"""Revocation: a ClusterConnection deleted, switched to pull or given a new token ends its agent's stream at once.

The ingester watches the hub's ClusterConnections and Secrets; the stream ends within a second of
the change (the issue's bound, not a setting) and nothing the agent sends afterwards is stored.
"""

from __future__ import annotations

import base64
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from clusterpulse_ingester import server
from clusterpulse_ingester.auth import HubView, KnownCluster
from clusterpulse_ingester.plugin import IngesterPlugin
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.server import REFUSED
from clusterpulse_testing.polling import eventually
from push_support import (
    CC_API,
    HUB_NAMESPACE,
    TOKEN,
    WAIT,
    Stream,
    agent_connection,
    cluster_connection,
    collector_secret,
    secret,
)
from test_ingester_protocol import batch

from clusterpulse_core.context import Runtime

#: What the issue asks: the open stream ends within a second of the hub change.
REVOCATION_BOUND = 1.0


def _port(runtime: Runtime) -> int:
    plugin = runtime.plugins.plugin("ingester")
    assert isinstance(plugin, IngesterPlugin) and plugin.server is not None
    return plugin.server.port


def _rotate(hub: Any) -> None:
    current = hub.get("v1", "secrets", "clusterpulse-collector-edge", HUB_NAMESPACE)
    current["data"]["token"] = base64.b64encode(b"a-new-token-for-edge").decode()
    hub.update(current)


def _switch_to_pull(hub: Any) -> None:
    current = hub.get(CC_API, "clusterconnections", "edge", HUB_NAMESPACE)
    current["spec"]["collectionMode"] = "pull"
    hub.update(current)


def _delete(hub: Any) -> None:
    hub.delete(CC_API, "clusterconnections", "edge", HUB_NAMESPACE)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_delete, "revoked_unknown_cluster"),
        (_switch_to_pull, "revoked_not_push"),
        (_rotate, "revoked_token_changed"),
    ],
)
def test_a_hub_change_ends_the_stream_at_once_and_nothing_later_is_stored(
    start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any, change: Callable[[Any], None], reason: str
) -> None:
    runtime, recording = start_ingester()
    stream = Stream(_port(runtime), TOKEN + "edge")
    stream.register("edge", TOKEN + "edge")
    stream.send(pb.ConnectRequest(metrics=batch("edge", "before")))
    assert stream.recv().ack.success
    stored = len(recording.pieces)

    changed = time.monotonic()
    change(hub)
    eventually(
        lambda: agent_connection(runtime.plugins, "edge") is None,
        "the registration to be revoked",
        timeout=REVOCATION_BOUND,
    )
    # Sent after the ingester dropped the registration: never read, never stored.
    stream.send(pb.ConnectRequest(metrics=batch("edge", "after")))
    error = stream.error()
    ended = time.monotonic() - changed
    stream.close()
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED and error.details() == REFUSED
    assert ended < REVOCATION_BOUND, f"the stream ended {ended:.2f} s after the change"
    assert len(recording.pieces) == stored
    assert runtime.metrics.get_sample_value("clusterpulse_ingester_streams_rejected_total", {"reason": reason}) == 1

    # And the agent cannot come back with the token it had.
    again = Stream(_port(runtime), TOKEN + "edge")
    again.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN + "edge")))
    assert again.error().code() == grpc.StatusCode.UNAUTHENTICATED
    again.close()
    assert len(recording.pieces) == stored

    # The other cluster's agent is not disturbed.
    other = Stream(_port(runtime), TOKEN + "other")
    other.register("other", TOKEN + "other")
    other.send(pb.ConnectRequest(metrics=batch("other", "o-1")))
    assert other.recv().ack.success
    other.close()


def test_only_push_clusters_are_accepted(start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any) -> None:
    hub.create(secret("pulled-token", "hub-credential-pulled"))
    hub.create(collector_secret("pulled", TOKEN + "pulled"))
    hub.create(cluster_connection("pulled", "https://127.0.0.1:1", push=False))
    runtime, recording = start_ingester()
    stream = Stream(_port(runtime), TOKEN + "pulled")
    stream.send(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="pulled", token=TOKEN + "pulled")))
    stream.send(pb.ConnectRequest(metrics=batch("pulled")))
    error = stream.error()
    stream.close()
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED and error.details() == REFUSED
    assert recording.pieces == [] and agent_connection(runtime.plugins, "pulled") is None
    assert runtime.metrics.get_sample_value("clusterpulse_ingester_streams_rejected_total", {"reason": "not_push"}) == 1


@pytest.mark.parametrize(
    ("source", "holder"),
    [("hub", "clusterpulse-collector-edge"), ("credentials", "edge-token")],
)
def test_a_changed_token_secret_queues_the_cluster_whose_token_it_holds(
    start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any, source: str, holder: str
) -> None:
    """Which Secret holds which cluster's token comes from the clusters (the fleet view), not from the
    Secret: a Secret merely claiming a cluster (the collector-token label, an owner reference to a
    ClusterConnection) queues nothing."""
    decoy = collector_secret("edge", "not-a-token")
    decoy["metadata"].update(
        name="decoy",
        ownerReferences=[{"apiVersion": CC_API, "kind": "ClusterConnection", "name": "other", "uid": "u-1"}],
    )
    hub.create(decoy)
    runtime, _ = start_ingester(collector_token_source=source)
    queued: list[str] = []
    runtime.on_resync_request(lambda reason, ref: queued.append(ref.name if ref is not None else "*"))

    decoy = hub.get("v1", "secrets", "decoy", HUB_NAMESPACE)
    decoy["data"]["token"] = base64.b64encode(b"still-not-a-token").decode()
    hub.update(decoy)
    current = hub.get("v1", "secrets", holder, HUB_NAMESPACE)
    current["data"]["token"] = base64.b64encode(b"a-new-token-for-edge").decode()
    hub.update(current)

    # The Secrets' events are handled in order: once the holder's is seen, the decoy's was too.
    eventually(lambda: "edge" in queued, f"the change of {holder} to queue edge", timeout=REVOCATION_BOUND)
    assert queued == ["edge"]


def test_a_hub_change_rechecks_only_the_streams_of_its_cluster(
    start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every status patch of every cluster is a hub event: it looks up that cluster's streams only.

    The periodic pass is pushed out of the test's reach so that every look-up counted is an event's.
    The last change (``third`` deleted) is also the marker: the watch delivers the changes in order
    and the loop runs them in order, so once ``third`` is revoked the change of ``edge`` was checked.
    """
    hub.create(secret("third-token", "hub-credential-third"))
    hub.create(collector_secret("third", TOKEN + "third"))
    hub.create(cluster_connection("third", "https://127.0.0.1:1", push=True))
    monkeypatch.setattr(server, "RECHECK_INTERVAL", 3600.0)
    looked: list[str] = []
    real_lookup = HubView.lookup

    def counting_lookup(view: HubView, cluster: str) -> KnownCluster:
        looked.append(cluster)
        return real_lookup(view, cluster)

    monkeypatch.setattr(HubView, "lookup", counting_lookup)
    runtime, _ = start_ingester()
    streams = []
    for cluster, count in (("edge", 3), ("other", 3), ("third", 1)):
        for _ in range(count):
            stream = Stream(_port(runtime), TOKEN + cluster)
            assert stream.register(cluster, TOKEN + cluster).HasField("config")
            streams.append(stream)
    looked.clear()

    current = hub.get(CC_API, "clusterconnections", "edge", HUB_NAMESPACE)
    current["metadata"].setdefault("labels", {})["touched"] = "yes"
    hub.update(current)
    hub.delete(CC_API, "clusterconnections", "third", HUB_NAMESPACE)
    eventually(lambda: agent_connection(runtime.plugins, "third") is None, "third's stream revoked", timeout=WAIT)
    for stream in streams:
        stream.close()
    assert Counter(looked) == {"edge": 3, "third": 1}, "each change looks up its own cluster's streams, once each"
