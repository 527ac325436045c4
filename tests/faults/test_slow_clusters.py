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
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_testing.hostile import HostileProxy
from clusterpulse_testing.polling import eventually
from fault_support import TOKEN, WAIT, ManagerProcess, add_cluster, make_hub, managed_objects, write_config

from clusterpulse_core.runtime.manager import CANCEL_WAIT

DRIP_TIMEOUT = 3  # spec.monitoring.timeout of the dripping clusters: the reconcile deadline
GRACE = 2.0
#: Healthy clusters stored / dripping ones failed: the drips hold the workers for their deadline
#: (connection test, collection), then one reconcile whose calls request_timeout (WAIT) bounds.
#: Without deadlines a drip holds a worker for minutes (one byte a second).
BOUND = 3 * DRIP_TIMEOUT + WAIT
#: SIGTERM to exit: the grace, the cut reconciles' join (CANCEL_WAIT), then the rest of the stop
#: (informers, plugins), its calls bounded by request_timeout. Well under the long reconcile's 60 s.
EXIT_BOUND = GRACE + CANCEL_WAIT + WAIT


def _status(client: redis.Redis, name: str) -> dict[str, Any] | None:
    raw = client.get(f"cluster:{name}:status")
    return json.loads(raw) if raw else None


def test_dripping_clusters_do_not_starve_healthy_ones_and_sigterm_exits_in_time(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    healthy = [kube_api(objects=managed_objects(f"node-{i}"), require_token=TOKEN) for i in range(2)]
    drip_upstream = kube_api(objects=managed_objects("slow-node"), require_token=TOKEN)
    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    ours = {entry["id"] for entry in client.client_list()}  # connections before the manager's
    with HostileProxy(drip_upstream.url) as proxy, HostileProxy(drip_upstream.url) as long_proxy:
        proxy.drip(r"^/api", bytes_per_second=1)
        long_proxy.drip(r"^/api", bytes_per_second=1)
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
                timeout=BOUND,
            )
            healthy_after = time.monotonic() - started
            eventually(
                lambda: all((_status(client, f"drip-{i}") or {}).get("health") == "unhealthy" for i in range(3)),
                "the dripping clusters' failure",
                timeout=BOUND,
            )
            failed_after = time.monotonic() - started
            message = _status(client, "drip-0")["message"]  # type: ignore[index]
            print(
                f"\nhealthy clusters stored after {healthy_after:.1f}s, dripping ones failed after "
                f"{failed_after:.1f}s (deadline {DRIP_TIMEOUT}s): {message}"
            )
            assert "deadline exceeded" in message
            assert healthy_after < BOUND
            assert failed_after < BOUND

            # A reconcile that drips for a minute is in flight when SIGTERM arrives: its own proxy
            # has received its first call (the connection test), whose answer drips.
            add_cluster(hub, "drip-long", long_proxy.url, monitoring={"timeout": 60})
            manager.eventually(
                lambda: any(path.startswith("/api") for _method, path, _headers in long_proxy.seen),
                "the long reconcile's first call to its cluster",
                timeout=BOUND,
            )
            hub.clear_requests()
            manager.signal(signal.SIGTERM)
            sent = time.monotonic()
            code = manager.wait(timeout=EXIT_BOUND)
            exit_after = time.monotonic() - sent
            stopped_at = manager.log_time(r"manager .* stopped")
            late = [w for w in hub.writes if w.time > stopped_at]
            print(
                f"SIGTERM -> exit {code} after {exit_after:.1f}s (grace {GRACE}s, bound {EXIT_BOUND:g} s); "
                f"hub writes after 'stopped': {len(late)}"
            )
            assert code == 0
            assert exit_after < EXIT_BOUND
            assert not late
            # Redis has served everything the exited manager sent once it has dropped its connections
            # (a client's commands are served before its end of stream).
            eventually(
                lambda: {entry["id"] for entry in client.client_list()} <= ours,
                "Redis to drop the exited manager's connections",
                timeout=RedisSettings().socket_timeout,
            )
            assert _status(client, "drip-long") is None, "the cancelled reconcile wrote a status"
        finally:
            manager.stop()
            client.close()
