"""A node turning NotReady under the real Manager: pending, firing after ``for``, resolved; restarts.

Real parts: the Manager and the installed plugins (redis, cluster, alerts) loaded from a
config file, the hub and the managed cluster on the Kubernetes API emulator, redis-server.
Only the alerts engine's monotonic clock is the test's, so ``for`` passes when the test says.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from alerts_support import (
    WAIT,
    EventTap,
    FakeMonotonic,
    alert_hashes,
    cluster_connection,
    cycle,
    hub_api,
    managed_objects,
    node,
    secret,
    start_controller,
)
from clusterpulse_testing.polling import eventually

PLUGINS = ("redis", "cluster", "alerts")
# Other built-in rules stay enabled; NodeNotReady gets a 60 s `for` the fake clock jumps over.
RULES = "[plugins.alerts.rules.NodeNotReady]\nfor = 60\n"


def _events(client: redis.Redis, cluster: str) -> list[dict[str, Any]]:
    from clusterpulse_core.serde import loads

    return [
        e
        for e in (loads(raw) for raw in client.lrange(f"events:{cluster}", 0, -1))
        if str(e["type"]).startswith("alert.")
    ]


def _set_ready(managed: Any, name: str, ready: bool) -> None:
    current = managed.get("v1", "nodes", name)
    current["status"] = node(name, ready)["status"]
    managed.update(current)


def test_not_ready_node_fires_after_for_and_resolves_once(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = hub_api(kube_api)
    managed = kube_api(objects=managed_objects())
    hub.create(secret("prod-token"))
    hub.create(cluster_connection("prod", managed.url))
    client = redis.Redis.from_url(redis_url)
    tap = EventTap(client)
    controller = start_controller(hub, redis_url, tmp_path, PLUGINS, RULES)
    try:
        eventually(lambda: client.exists("cluster:prod:status"), "the first reconcile", timeout=WAIT)
        assert alert_hashes(client, "prod") == {}

        _set_ready(managed, "node-b", False)
        cycle(controller.manager)
        # Pending: the ticker keeps evaluating, but the clock has not moved past `for`.
        eventually(
            lambda: any(not a.firing for a in controller.plugin.engine.active.get(("cluster", "prod"), {}).values()),
            "the pending alert",
            timeout=WAIT,
        )
        assert alert_hashes(client, "prod") == {}

        controller.clock.advance(60)
        fired = eventually(lambda: alert_hashes(client, "prod"), "the firing alert", timeout=WAIT)
        assert len(fired) == 1
        ((alert_id, fields),) = fired.items()
        assert alert_id.startswith("NodeNotReady-")
        assert fields["id"] == alert_id
        assert fields["name"] == "NodeNotReady"
        assert fields["severity"] == "critical"
        assert fields["resource_type"] == "node"
        assert fields["resource_name"] == "node-b"
        assert fields["namespace"] == ""
        assert fields["source"] == "builtin"
        assert fields["message"] == "node node-b is not ready"
        assert fields["timestamp"].endswith("Z")
        assert 0 < client.ttl(f"alerts:prod:{alert_id}") <= 600

        # Still NotReady on the next reconcile: the same alert is refreshed, not duplicated.
        cycle(controller.manager)
        assert list(alert_hashes(client, "prod")) == [alert_id]

        _set_ready(managed, "node-b", True)
        cycle(controller.manager)
        eventually(lambda: not alert_hashes(client, "prod"), "the resolution", timeout=WAIT)
        events = _events(client, "prod")
        assert [e["type"] for e in events] == ["alert.resolved", "alert.fired"]  # newest first
        assert all(e["data"]["id"] == alert_id for e in events)
        published = eventually(lambda: len(tap.drain()) >= 2 and tap.seen, "the published events", timeout=WAIT)
        assert [e["type"] for e in published] == ["alert.fired", "alert.resolved"]
    finally:
        controller.stop()
        tap.close()
        client.close()


def test_restart_keeps_firing_alerts_without_announcing_them_again(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = hub_api(kube_api)
    managed = kube_api(objects=managed_objects())
    hub.create(secret("prod-token"))
    hub.create(cluster_connection("prod", managed.url))
    _set_ready(managed, "node-a", False)
    client = redis.Redis.from_url(redis_url)
    first = start_controller(hub, redis_url, tmp_path, PLUGINS, RULES)
    try:
        eventually(lambda: client.exists("cluster:prod:status"), "the first reconcile", timeout=WAIT)
        first.clock.advance(60)
        fired = eventually(lambda: alert_hashes(client, "prod"), "the firing alert", timeout=WAIT)
    finally:
        first.stop()
    assert [e["type"] for e in _events(client, "prod")] == ["alert.fired"]

    tap = EventTap(client)
    clock = FakeMonotonic()
    second = start_controller(hub, redis_url, tmp_path, PLUGINS, RULES, clock=clock)
    try:
        assert [a.id for a in second.plugin.engine.firing()] == list(fired)
        cycle(second.manager)
        clock.advance(120)  # past `for`: a re-derived alert would fire (and be announced) now
        cycle(second.manager)
        assert alert_hashes(client, "prod").keys() == fired.keys()
        assert [e["type"] for e in _events(client, "prod")] == ["alert.fired"]

        _set_ready(managed, "node-a", True)
        cycle(second.manager)
        eventually(lambda: not alert_hashes(client, "prod"), "the resolution", timeout=WAIT)
        assert [e["type"] for e in _events(client, "prod")] == ["alert.resolved", "alert.fired"]
        assert [e["type"] for e in tap.drain()] == ["alert.resolved"]
    finally:
        second.stop()
        tap.close()
        client.close()


def test_deleted_cluster_takes_its_alerts(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> None:
    hub = hub_api(kube_api)
    managed = kube_api(objects=managed_objects())
    hub.create(secret("prod-token"))
    hub.create(cluster_connection("prod", managed.url))
    _set_ready(managed, "node-a", False)
    client = redis.Redis.from_url(redis_url)
    controller = start_controller(hub, redis_url, tmp_path, PLUGINS, RULES)
    try:
        eventually(lambda: client.exists("cluster:prod:status"), "the first reconcile", timeout=WAIT)
        controller.clock.advance(60)
        eventually(lambda: alert_hashes(client, "prod"), "the firing alert", timeout=WAIT)
        hub.delete("clusterpulse.io/v1alpha1", "clusterconnections", "prod", "clusterpulse")
        eventually(lambda: not client.exists("cluster:prod:status"), "the deletion", timeout=WAIT)
        assert alert_hashes(client, "prod") == {}
        assert controller.plugin.engine.firing() == []
    finally:
        controller.stop()
        client.close()


def test_start_survives_an_unreadable_store(kube_api: Callable[..., Any], tmp_path: Path, caplog: Any) -> None:
    import socket

    from clusterpulse_core.kube.client import KubeClient
    from clusterpulse_core.runtime.bootstrap import build_runtime, load, start_plugins, stop_plugins

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    config_file = tmp_path / "unreachable.toml"
    config_file.write_text(
        '[clusterpulse]\nplugins = ["redis", "alerts"]\n[plugins.redis]\n'
        f'url = "redis://127.0.0.1:{closed_port}/0"\nretry_attempts = 0\n'
    )
    config, host = load(str(config_file), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub_api(kube_api).api_client()))
    start_plugins(runtime)
    try:
        assert "could not read the firing alerts back (ConnectionError" in caplog.text
        assert len(host.plugin("alerts").engine.rules) == 13  # type: ignore[attr-defined]
    finally:
        stop_plugins(runtime)
