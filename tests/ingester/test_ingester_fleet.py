"""The ingester signs agents in against the clusters of the cluster plugin's typed fleet view
(``clusterpulse_fleet``): without that plugin it refuses to start, saying what to enable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clusterpulse_testing.servers import free_port
from push_support import write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginError
from clusterpulse_core.runtime.bootstrap import build_runtime, load, start_plugins


def test_without_the_cluster_plugin_the_ingester_says_what_to_enable(hub: Any, tmp_path: Path) -> None:
    config_file = write_config(
        tmp_path / "hub.toml", ["ingester"], {"ingester": {"bind_address": "127.0.0.1", "port": free_port()}}
    )
    config, host = load(str(config_file), env={})
    assert host.hook("clusterpulse_fleet") is None
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    # A failed start stops what had started and closes the store and pool by itself.
    with pytest.raises(
        PluginError,
        match=r"plugin 'ingester' failed to start: StartError: the ingester signs "
        r"agents in against their ClusterConnections, which no loaded plugin "
        r"offers \(clusterpulse_fleet\): enable the cluster plugin",
    ):
        start_plugins(runtime)
