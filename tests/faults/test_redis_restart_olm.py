"""Redis restarted empty with OLM data present: every key is back within one reconcile interval.

The time of a cluster's last OLM scan is kept in memory (scans run every
``operator_scan_interval``, 300 s). The trial found the ``operators`` keys back only after the
next scan (180-300 s) while everything else was back in 1.6 s: the restart watcher queued every
object, but the reconciles skipped the scan. The watcher now tells every plugin that storage
lost its data (``clusterpulse_storage_lost``), and the cluster plugin forgets its scan times.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_testing.servers import ServerProcess
from fault_support import (
    TOKEN,
    WAIT,
    ManagerProcess,
    add_cluster,
    make_hub,
    managed_objects,
    olm_objects,
    wait_for_restart_check,
    write_config,
)

INTERVAL = ClusterSettings().reconciliation_interval  # the bound: one reconcile interval
SCAN_INTERVAL = 600  # far longer than the bound: a skipped scan cannot be hidden by the scan coming due


def test_every_key_including_olm_is_back_within_one_interval_of_an_empty_restart(
    kube_api: Callable[..., Any], redis_server: ServerProcess, redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    for name in ("east", "west"):
        objects = [*managed_objects(f"{name}-1"), *olm_objects()]
        add_cluster(hub, name, kube_api(objects=objects, require_token=TOKEN).url)
    config = write_config(
        tmp_path / "config.toml",
        redis_url,
        plugins={"cluster": {"reconciliation_interval": INTERVAL, "operator_scan_interval": SCAN_INTERVAL}},
    )
    manager = ManagerProcess(config, hub, tmp_path)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    olm_keys = {
        f"cluster:{name}:{suffix}" for name in ("east", "west") for suffix in ("operators", "operators_summary")
    }
    try:
        manager.wait_log(r"manager .* started")
        manager.eventually(lambda: olm_keys <= set(client.keys("*")), "the first reconciles with OLM data", WAIT)
        wait_for_restart_check(redis_url)
        before = set(client.keys("*"))
        redis_server.stop()
        redis_server.start()
        restarted = time.monotonic()
        assert not client.keys("*")

        def missing() -> set[str]:
            return before - set(client.keys("*"))

        try:
            manager.eventually(lambda: not missing(), f"all {len(before)} keys back", INTERVAL)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; still missing: {sorted(missing())}") from exc
        back_after = time.monotonic() - restarted
        print(
            f"\n{len(before)} keys ({len(olm_keys)} of them OLM) back {back_after:.1f}s after an empty Redis "
            f"restart (bound: one reconcile interval, {INTERVAL}s; OLM scan interval {SCAN_INTERVAL}s)"
        )
        assert "reset its cached state" in manager.log()
    finally:
        manager.stop()
        client.close()
