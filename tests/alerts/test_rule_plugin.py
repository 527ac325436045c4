"""A third-party rule plugin (tests/plugins/clusterpulse-example, entry point ``example-rules``).

It registers a rule through ``clusterpulse_register_alert_rules``; the alerts plugin evaluates
it like the built-ins; ``clusterpulse plugins`` lists it and ``clusterpulse alerts`` shows
what it fired, both run as real subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from alerts_support import (
    NAMESPACE,
    WAIT,
    alert_hashes,
    cluster_connection,
    hub_api,
    managed_objects,
    secret,
    start_controller,
)
from clusterpulse_testing.polling import eventually

PLUGINS = ("redis", "cluster", "alerts", "example-rules")
CLI = [sys.executable, "-c", "from clusterpulse_core.cli import main; main()"]


def _cli(args: list[str], config: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLUSTERPULSE_CONFIG", "NAMESPACE", "REDIS_HOST")}
    return subprocess.run([*CLI, "--config", str(config), *args], env=env, capture_output=True, text=True, timeout=60)


def test_rule_plugin_adds_a_rule(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> None:
    hub = hub_api(kube_api)
    managed = kube_api(objects=managed_objects())
    hub.create(secret("edge-token"))
    hub.create(cluster_connection("edge", managed.url))
    client = redis.Redis.from_url(redis_url)
    controller = start_controller(hub, redis_url, tmp_path, PLUGINS)
    try:
        contributed = controller.manager.runtime.contributions.alert_rules["ExampleSmallCluster"]
        assert contributed.plugin == "example-rules"
        fired = eventually(lambda: alert_hashes(client, "edge"), "the plugin rule's alert", timeout=WAIT)
        ((alert_id, fields),) = ((k, v) for k, v in fired.items() if v["name"] == "ExampleSmallCluster")
        assert fields["source"] == "plugin example-rules"
        assert fields["severity"] == "info"
        assert fields["message"] == "cluster edge has only 2 nodes"
    finally:
        controller.stop()
        client.close()

    config = tmp_path / "cli.toml"
    config.write_text(
        f'[clusterpulse]\nplugins = {json.dumps(list(PLUGINS))}\nnamespace = "{NAMESPACE}"\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n'
    )
    listed = _cli(["plugins", "--json"], config)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)["plugins"]}
    assert rows["example-rules"]["contributes"] == {"alert_rules": ["ExampleSmallCluster"]}
    assert "NodeNotReady" in rows["alerts"]["contributes"]["alert_rules"]

    shown = _cli(["alerts", "--json", "--cluster", "edge", "--severity", "info"], config)
    assert shown.returncode == 0, shown.stderr
    assert [(a["id"], a["name"]) for a in json.loads(shown.stdout)] == [(alert_id, "ExampleSmallCluster")]
    table = _cli(["alerts"], config)
    assert table.returncode == 0, table.stderr
    assert "ExampleSmallCluster" in table.stdout and "cluster/edge" in table.stdout


def test_rules_table_tunes_and_disables_rules(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> None:
    hub = hub_api(kube_api)
    managed = kube_api(objects=managed_objects())
    hub.create(secret("edge-token"))
    hub.create(cluster_connection("edge", managed.url))
    client = redis.Redis.from_url(redis_url)
    rules = (
        '[plugins.alerts.rules.ExampleSmallCluster]\nthreshold = 2\nseverity = "warning"\n'
        "[plugins.alerts.rules.NodeUnschedulable]\nenabled = false\n"
    )
    controller = start_controller(hub, redis_url, tmp_path, PLUGINS, rules)
    try:
        eventually(lambda: client.exists("cluster:edge:status"), "the first reconcile", timeout=WAIT)
        controller.clock.advance(3600)
        controller.manager.resync()
        eventually(lambda: controller.plugin.engine.clusters.get("edge"), "the view", timeout=WAIT)
        assert "NodeUnschedulable" not in controller.plugin.engine.rules
        assert controller.plugin.engine.rules["ExampleSmallCluster"].severity == "warning"
        assert controller.plugin.engine.firing() == []  # 2 nodes are not fewer than 2
    finally:
        controller.stop()
        client.close()
