"""Slow-drip managed clusters: deadlines keep healthy clusters on schedule; SIGTERM exits in time.

The manager runs as a subprocess with three ClusterConnection workers. Three clusters answer
one byte a second (behind the hostile proxy); two are healthy. Before wall-clock deadlines a
dripping cluster held a worker for minutes and SIGTERM could not end the process.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_testing.hostile import HostileProxy
from clusterpulse_testing.polling import eventually
from fault_support import TOKEN, WAIT, ManagerProcess, add_cluster, make_hub, managed_objects, write_config

DRIP_TIMEOUT = 3  # spec.monitoring.timeout of the dripping clusters: the reconcile deadline
GRACE = 2.0


def _status(client: redis.Redis, name: str) -> dict[str, Any] | None:
    raw = client.get(f"cluster:{name}:status")
    return json.loads(raw) if raw else None


def test_dripping_clusters_do_not_starve_healthy_ones_and_sigterm_exits_in_time(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    healthy = [kube_api(objects=managed_objects(f"node-{i}"), require_token=TOKEN) for i in range(2)]
    drip_upstream = kube_api(objects=managed_objects("slow-node"), require_token=TOKEN)
    client = redis.Redis.from_url(redis_url)
    with HostileProxy(drip_upstream.url) as proxy:
        proxy.drip(r"^/api", bytes_per_second=1)
        # The dripping clusters come first: they take all three workers at once.
        for index in range(3):
            add_cluster(hub, f"drip-{index}", proxy.url, monitoring={"timeout": DRIP_TIMEOUT})
        for index, api in enumerate(healthy):
            add_cluster(hub, f"healthy-{index}", api.url)
        config = write_config(tmp_path / "config.toml", redis_url, core={"shutdown_grace": GRACE})
        manager = ManagerProcess(config, hub, tmp_path)
        try:
            manager.wait_log(r"manager .* started")
            started = time.monotonic()
            eventually(
                lambda: all((_status(client, f"healthy-{i}") or {}).get("health") == "healthy" for i in range(2)),
                "the healthy clusters' status",
                timeout=30,
            )
            healthy_after = time.monotonic() - started
            eventually(
                lambda: all((_status(client, f"drip-{i}") or {}).get("health") == "unhealthy" for i in range(3)),
                "the dripping clusters' failure",
                timeout=30,
            )
            failed_after = time.monotonic() - started
            message = _status(client, "drip-0")["message"]  # type: ignore[index]
            print(
                f"\nhealthy clusters stored after {healthy_after:.1f}s, dripping ones failed after "
                f"{failed_after:.1f}s (deadline {DRIP_TIMEOUT}s): {message}"
            )
            assert "deadline exceeded" in message
            assert healthy_after < 3 * DRIP_TIMEOUT + 10
            assert failed_after < 3 * DRIP_TIMEOUT + 10

            # A reconcile that drips for a minute is in flight when SIGTERM arrives.
            add_cluster(hub, "drip-long", proxy.url, monitoring={"timeout": 60})
            eventually(lambda: client.exists("cluster:drip-long:spec"), "the long reconcile to start", timeout=WAIT)
            time.sleep(0.5)
            hub.clear_requests()
            manager.signal(signal.SIGTERM)
            sent = time.monotonic()
            code = manager.wait(timeout=GRACE + 20)
            exit_after = time.monotonic() - sent
            stopped_at = manager.log_time(r"manager .* stopped")
            late = [w for w in hub.writes if w.time > stopped_at]
            print(
                f"SIGTERM -> exit {code} after {exit_after:.1f}s (grace {GRACE}s, bound grace + 5 s); "
                f"hub writes after 'stopped': {len(late)}"
            )
            assert code == 0
            assert exit_after < GRACE + 5
            assert not late
            time.sleep(1.0)
            assert _status(client, "drip-long") is None, "the cancelled reconcile wrote a status"
        finally:
            manager.stop()
            client.close()
