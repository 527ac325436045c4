"""A hostile cluster answering a 200 MB node list or a deeply nested namespace list cannot blow up the
controller: the response is refused at ``max_response_bytes`` and peak RSS stays bounded.

The manager runs as a subprocess (its peak RSS is read from ``/proc/<pid>/status``); the
hostile cluster is the proxy in front of an emulator.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_testing.hostile import HostileProxy
from clusterpulse_testing.polling import eventually
from fault_support import TOKEN, ManagerProcess, add_cluster, make_hub, managed_objects, write_config

MAX_RESPONSE = 32 * 1024 * 1024
#: Documented in docs/faults.md: baseline (~100 MB) + about twice max_response_bytes.
RSS_BOUND_MB = 100 + 2 * MAX_RESPONSE / 2**20 + 50


def _message(client: redis.Redis, name: str) -> str:
    raw = client.get(f"cluster:{name}:status")
    return str(json.loads(raw).get("message", "")) if raw else ""


def test_a_200_mb_or_deeply_nested_answer_is_refused_within_the_rss_bound(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    upstream = kube_api(objects=managed_objects("node-a"), require_token=TOKEN)
    client = redis.Redis.from_url(redis_url)
    with HostileProxy(upstream.url) as huge, HostileProxy(upstream.url) as nested:
        huge.huge(r"^/api/v1/nodes$", 200 * 1024 * 1024)
        nested.nested(r"^/api/v1/namespaces$", 200_000)
        add_cluster(hub, "huge", huge.url)
        add_cluster(hub, "nested", nested.url)
        config = write_config(tmp_path / "config.toml", redis_url, core={"max_response_bytes": MAX_RESPONSE})
        manager = ManagerProcess(config, hub, tmp_path)
        try:
            manager.wait_log(r"manager .* started")
            eventually(lambda: "over the limit" in _message(client, "huge"), "the huge list to be refused", 60)
            eventually(lambda: _message(client, "nested"), "the nested list to fail", 60)
            peak = manager.peak_rss_mb()
            print(
                f"\npeak RSS {peak:.0f} MiB (bound {RSS_BOUND_MB:.0f} MiB, max_response_bytes "
                f"{MAX_RESPONSE >> 20} MiB); huge: {_message(client, 'huge')[:100]}; "
                f"nested: {_message(client, 'nested')[:100]}"
            )
            assert peak < RSS_BOUND_MB
            assert "not acceptable JSON" in _message(client, "nested")
        finally:
            manager.stop()
            client.close()
