"""Redis restarted empty: the backend notices and every object is queued again, so all keys are
back within seconds (not at each object's next interval, up to minutes later).

The reconcile interval is far longer than the bound (one restart check and one reconcile), so
keys brought back by the next interval cannot pass for the watcher's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_testing.servers import ServerProcess
from fault_support import (
    RESTART_CHECK,
    TOKEN,
    WAIT,
    ManagerProcess,
    add_cluster,
    make_hub,
    managed_objects,
    wait_for_restart_check,
    write_config,
)

#: The bound: the watcher's next check, then one reconcile (its calls bounded by request_timeout).
BOUND_SECONDS = RESTART_CHECK + WAIT
INTERVAL = 600  # the reconcile interval: far longer than the bound


def test_all_keys_are_back_within_seconds_of_an_empty_restart(
    kube_api: Callable[..., Any], redis_server: ServerProcess, redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    for name in ("east", "west"):
        add_cluster(hub, name, kube_api(objects=managed_objects(f"{name}-1", f"{name}-2"), require_token=TOKEN).url)
    config = write_config(
        tmp_path / "config.toml", redis_url, plugins={"cluster": {"reconciliation_interval": INTERVAL}}
    )
    manager = ManagerProcess(config, hub, tmp_path)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        manager.wait_log(r"manager .* started")
        manager.eventually(
            lambda: {"cluster:east:status", "cluster:west:status"} <= set(client.keys("*")),
            "the first reconciles",
            WAIT,
        )
        wait_for_restart_check(redis_url)
        before = set(client.keys("*"))
        redis_server.stop()
        redis_server.start()
        restarted = time.monotonic()
        assert not client.keys("*")
        manager.eventually(lambda: before <= set(client.keys("*")), f"all {len(before)} keys back", BOUND_SECONDS)
        back_after = time.monotonic() - restarted
        print(f"\n{len(before)} keys back {back_after:.1f}s after an empty Redis restart (bound {BOUND_SECONDS:g}s)")
        assert back_after < BOUND_SECONDS
        assert "queued all" in manager.log()
    finally:
        manager.stop()
        client.close()
