"""SIGTERM during a hung call: the messages state the grace that was used, not the call's timeout.

A reconcile with a 60 s deadline drips from a hostile proxy when SIGTERM arrives; the manager
waits ``shutdown_grace`` and cuts the call off. The report of the trial: it exited after the
configured grace but logged "shutdown after 60s" (the cut call's own timeout).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_testing.hostile import HostileProxy
from clusterpulse_testing.polling import eventually
from fault_support import TOKEN, WAIT, ManagerProcess, add_cluster, make_hub, managed_objects, write_config

GRACE = 1.5
CALL_TIMEOUT = 60  # spec.monitoring.timeout of the hung reconcile


def test_the_sigterm_messages_state_the_grace_used(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    upstream = kube_api(objects=managed_objects("slow-node"), require_token=TOKEN)
    client = redis.Redis.from_url(redis_url)
    with HostileProxy(upstream.url) as proxy:
        proxy.drip(r"^/api", bytes_per_second=1)
        add_cluster(hub, "hung", proxy.url, monitoring={"timeout": CALL_TIMEOUT})
        config = write_config(tmp_path / "config.toml", redis_url, core={"shutdown_grace": GRACE})
        manager = ManagerProcess(config, hub, tmp_path)
        try:
            manager.wait_log(r"manager .* started")
            eventually(lambda: client.exists("cluster:hung:spec"), "the hung reconcile to start", timeout=WAIT)
            manager.signal(signal.SIGTERM)
            assert manager.wait(timeout=GRACE + 20) == 0
            log = manager.log()
            grace_lines = [line for line in log.splitlines() if re.search(r"grace|cut off", line)]
            print(f"\nSIGTERM with shutdown_grace {GRACE:g}s during a {CALL_TIMEOUT}s call:\n" + "\n".join(grace_lines))
            assert f"after the {GRACE:g}s shutdown grace" in log, log[-3000:]
            assert re.search(rf"cut off at shutdown after the {GRACE:g}s grace", log), log[-3000:]
            assert not re.search(rf"after {CALL_TIMEOUT}(\.0)? ?s", log), log[-3000:]
        finally:
            manager.stop()
            client.close()
