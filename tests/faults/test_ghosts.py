"""No ghosts: an object deleted while no controller runs is forgotten at the next start.

The trial deleted a ClusterConnection while the controller was down: it stayed in Redis forever
(``clusters:all``, a "healthy" status with a frozen ``last_check``, alerts firing until the node
keys expired). At start the manager now compares what storage holds with the hub, through each
kind plugin's ``clusterpulse_stored_refs``, and forgets what is gone as a deletion would.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_testing.polling import eventually
from fault_support import CC_API, HUB_NAMESPACE, TOKEN, WAIT, ManagerProcess, add_cluster, make_hub, write_config
from fault_support import managed_objects as objects_of


def test_a_cluster_deleted_while_the_controller_is_stopped_is_forgotten_at_start(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    for name in ("east", "west"):
        add_cluster(hub, name, kube_api(objects=objects_of(f"{name}-1"), require_token=TOKEN).url)
    config = write_config(tmp_path / "config.toml", redis_url)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    manager = ManagerProcess(config, hub, tmp_path, name="first")
    try:
        eventually(
            lambda: (
                {"east", "west"} <= client.smembers("clusters:all")
                and client.exists("cluster:west:status", "cluster:west:node:west-1")
            ),
            "both clusters stored",
            WAIT,
        )
    finally:
        manager.stop()
    hub.delete(CC_API, "clusterconnections", "west", HUB_NAMESPACE)
    assert client.sismember("clusters:all", "west")  # the ghost: nobody ran to see the deletion

    second = ManagerProcess(config, hub, tmp_path, name="second")
    try:
        second.wait_log(r"manager .* started", WAIT)
        started = time.monotonic()
        eventually(
            lambda: not client.sismember("clusters:all", "west") and not client.keys("cluster:west:*"),
            "the deleted cluster forgotten",
            WAIT,
        )
        gone_after = time.monotonic() - started
        print(
            f"\ncluster deleted while no controller ran: forgotten {gone_after:.1f}s after the next start "
            f"(bound {WAIT:g}s); east kept: {sorted(client.smembers('clusters:all'))}"
        )
        assert client.sismember("clusters:all", "east")
        assert "no longer exists on the hub" in second.log()
    finally:
        second.stop()
        client.close()
