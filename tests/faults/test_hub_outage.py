"""A hub outage does not mark managed clusters unhealthy: credentials come from the last good read.

The manager reads each cluster's token Secret from the hub at every reconcile; before the
cache, a hub outage turned every cluster into ``failed to get secret`` in Redis although the
clusters were fine. Here the hub is stopped (connection refused) while the clusters are
reconciled again and again; the outage lasts ten rounds of reconciles instead of the 60 s of the
report, which is the same situation: every reconcile in the outage needs the Secret (the cache
of the last good read has no age limit, so the count of reconciles matters, not the seconds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from fault_support import HUB_NAMESPACE, TOKEN, add_cluster, make_hub, managed_objects, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins

OUTAGE_ROUNDS = 10


def test_clusters_stay_healthy_while_the_hub_is_down(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    names = ("east", "west")
    for name in names:
        add_cluster(hub, name, kube_api(objects=managed_objects(f"{name}-node"), require_token=TOKEN).url)
    config, host = load(str(write_config(tmp_path / "config.toml", redis_url, core={"request_timeout": 2.0})), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client(), timeout=2.0))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    start_plugins(runtime)
    try:
        owner, kind = runtime.plugins.kinds["ClusterConnection"]
        objects = {name: hub.get(kind.api_version, kind.plural, name, HUB_NAMESPACE) for name in names}
        for obj in objects.values():
            assert reconcile_object(runtime, owner, kind, obj).ok

        hub.stop()
        started, rounds, unhealthy = time.monotonic(), 0, []
        while rounds < OUTAGE_ROUNDS:
            for name, obj in objects.items():
                outcome = reconcile_object(runtime, owner, kind, obj)
                status = json.loads(client.get(f"cluster:{name}:status") or "{}")
                if not outcome.ok or status.get("health") != "healthy":
                    unhealthy.append((name, outcome.detail, status.get("message")))
            rounds += 1
        print(
            f"\nhub down {time.monotonic() - started:.0f}s: {rounds} reconcile rounds of {len(names)} clusters, "
            f"{len(unhealthy)} marked unhealthy"
        )
        assert rounds >= 3
        assert not unhealthy

        hub.start()
        for obj in objects.values():
            assert reconcile_object(runtime, owner, kind, obj).ok
        assert hub.get(kind.api_version, kind.plural, "east", HUB_NAMESPACE)["status"]["phase"] == "Connected"
    finally:
        stop_plugins(runtime)
        client.close()
