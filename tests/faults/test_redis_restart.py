"""Redis restarted empty: the backend notices and every object is queued again, so all keys are
back within seconds (not at each object's next interval, up to minutes later)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import ServerProcess
from fault_support import TOKEN, ManagerProcess, add_cluster, make_hub, managed_objects, write_config

BOUND_SECONDS = 5.0


def test_all_keys_are_back_within_seconds_of_an_empty_restart(
    kube_api: Callable[..., Any], redis_server: ServerProcess, redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    for name in ("east", "west"):
        add_cluster(hub, name, kube_api(objects=managed_objects(f"{name}-1", f"{name}-2"), require_token=TOKEN).url)
    config = write_config(tmp_path / "config.toml", redis_url)
    manager = ManagerProcess(config, hub, tmp_path)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        eventually(
            lambda: {"cluster:east:status", "cluster:west:status"} <= set(client.keys("*")), "the first reconciles", 30
        )
        time.sleep(1.5)  # the restart watcher has seen the server
        before = set(client.keys("*"))
        redis_server.stop()
        redis_server.start()
        restarted = time.monotonic()
        assert not client.keys("*")
        eventually(lambda: before <= set(client.keys("*")), f"all {len(before)} keys back", 30)
        back_after = time.monotonic() - restarted
        print(f"\n{len(before)} keys back {back_after:.1f}s after an empty Redis restart (bound {BOUND_SECONDS}s)")
        assert back_after < BOUND_SECONDS
        assert "queued all" in manager.log()
    finally:
        manager.stop()
        client.close()
