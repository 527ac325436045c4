"""HubView.lookup: answered from memory while the hub objects are unchanged, never stale."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from clusterpulse_cluster.fleet import ClusterFleet
from clusterpulse_ingester.auth import HubView, digest
from clusterpulse_model import collector_token
from clusterpulse_model.fleet import FleetCluster
from clusterpulse_testing.polling import eventually
from push_support import CC_API, HUB_NAMESPACE, TOKEN, WAIT

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.kube.client import KubeClient

START = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


class Clock:
    """The view's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def view(hub: Any, clock: Clock) -> Iterator[HubView]:
    core = CoreSettings(namespace=HUB_NAMESPACE)
    hub_view = HubView(
        KubeClient(hub.api_client()), core, ClusterFleet(), lambda cluster, token_changed: None, clock=clock
    )
    assert hub_view.start(WAIT)
    yield hub_view
    hub_view.stop()


def accepts(view: HubView, token: str) -> bool:
    return view.lookup("edge").accepts(digest(token))


def test_an_unchanged_cluster_is_answered_from_memory(view: HubView) -> None:
    first = view.lookup("edge")
    assert first.accepts(digest(TOKEN + "edge"))
    assert view.lookup("edge") is first, "nothing changed on the hub: the same answer, not read again"


def test_a_rotation_is_seen_at_once_and_its_grace_ends_with_no_hub_change(
    view: HubView, hub: Any, clock: Clock
) -> None:
    old, new = TOKEN + "edge", "rotated-token-0123456789"
    assert accepts(view, old) and not accepts(view, new)
    secret = hub.get("v1", "secrets", collector_token.secret_name("edge"), HUB_NAMESPACE)
    data = {
        collector_token.TOKEN_KEY: new,
        collector_token.PREVIOUS_KEY: old,
        collector_token.PREVIOUS_UNTIL_KEY: (START + timedelta(minutes=5)).isoformat().replace("+00:00", "Z"),
    }
    secret["data"] = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    hub.update(secret)
    eventually(lambda: accepts(view, new), "the rotated Secret is seen by the next look-up", timeout=WAIT)
    assert accepts(view, old), "the previous token is accepted during its grace"
    clock.now = START + timedelta(minutes=5, seconds=1)
    assert not accepts(view, old), "the grace ended: the previous token is refused though the hub did not change"
    assert accepts(view, new)


class CountingFleet(ClusterFleet):
    """The cluster plugin's fleet view, counting the ClusterConnections it reads."""

    def __init__(self) -> None:
        self.read = 0

    def cluster(self, obj: Mapping[str, Any]) -> FleetCluster:
        self.read += 1
        return super().cluster(obj)


@pytest.mark.parametrize(
    ("source", "holder"),
    [(collector_token.HUB, "clusterpulse-collector-edge"), (collector_token.CREDENTIALS, "edge-token")],
)
def test_the_secret_holding_a_token_is_known_without_reading_the_clusters(
    hub: Any, clock: Clock, source: str, holder: str
) -> None:
    fleet = CountingFleet()
    core = CoreSettings(namespace=HUB_NAMESPACE)
    view = HubView(KubeClient(hub.api_client()), core, fleet, lambda cluster, token_changed: None, source, clock)
    assert view.start(WAIT)
    try:
        secret = hub.get("v1", "secrets", holder, HUB_NAMESPACE)
        eventually(lambda: view.token_of(secret) == "edge", "the token Secret's cluster known", timeout=WAIT)
        fleet.read = 0
        assert view.token_of(secret) == "edge"
        assert (
            view.token_of(
                hub.get(
                    "v1",
                    "secrets",
                    "other-token" if source == collector_token.HUB else "clusterpulse-collector-other",
                    HUB_NAMESPACE,
                )
            )
            == ""
        )
        assert fleet.read == 0, "a Secret's cluster comes from the index, not from decoding every cluster"

        edge = hub.get(CC_API, "clusterconnections", "edge", HUB_NAMESPACE)
        edge["spec"]["collectionMode"] = "pull"
        hub.update(edge)
        eventually(lambda: view.token_of(secret) == "", "a pull cluster holds no token", timeout=WAIT)
        edge = hub.get(CC_API, "clusterconnections", "edge", HUB_NAMESPACE)
        edge["spec"]["collectionMode"] = "push"
        hub.update(edge)
        eventually(lambda: view.token_of(secret) == "edge", "push again", timeout=WAIT)
        hub.delete(CC_API, "clusterconnections", "edge", HUB_NAMESPACE)
        eventually(lambda: view.token_of(secret) == "", "a deleted cluster holds no token", timeout=WAIT)
    finally:
        view.stop()
