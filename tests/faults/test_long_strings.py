"""Strings from specs and remote errors are clipped in status and logs.

The trial's ClusterConnection with a 900 KB endpoint got the whole endpoint copied into
``status.message`` (900,092 characters) and logged twice every 30 s (22.5 MB of log in three
minutes). Status messages are now clipped to ``MAX_STATUS_MESSAGE`` characters and every log
message to ``MAX_LOG_MESSAGE``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterpulse_testing.polling import eventually
from fault_support import CC_API, HUB_NAMESPACE, WAIT, ManagerProcess, make_hub, secret, write_config

from clusterpulse_core.context import MAX_STATUS_MESSAGE
from clusterpulse_core.logs import MAX_LOG_MESSAGE

ENDPOINT_CHARS = 900_000
#: What the log format puts before the message: time, level, logger name.
LOG_PREFIX = 200


def test_a_900_kb_endpoint_is_clipped_in_status_and_logs(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    hub.create(secret("huge-token", {"token": "x"}))
    endpoint = "https://" + "a" * ENDPOINT_CHARS + ".example:6443"
    hub.create(
        {
            "apiVersion": CC_API,
            "kind": "ClusterConnection",
            "metadata": {"name": "huge", "namespace": HUB_NAMESPACE},
            "spec": {"endpoint": endpoint, "credentialsRef": {"name": "huge-token"}},
        }
    )
    manager = ManagerProcess(write_config(tmp_path / "config.toml", redis_url), hub, tmp_path)
    try:
        status = eventually(
            lambda: (hub.get(CC_API, "clusterconnections", "huge", HUB_NAMESPACE) or {}).get("status"), "a status", WAIT
        )
        longest_line = max(len(line) for line in manager.log().splitlines())
        print(
            f"\n{len(endpoint)}-character endpoint: status.message {len(status.get('message', ''))} characters "
            f"(bound {MAX_STATUS_MESSAGE}), longest log line {longest_line} (bound {MAX_LOG_MESSAGE} + prefix)"
        )
        assert status.get("phase") == "Error" and status.get("message")
        assert len(status["message"]) <= MAX_STATUS_MESSAGE
        assert all(len(c.get("message", "")) <= MAX_STATUS_MESSAGE for c in status.get("conditions", []))
        assert longest_line <= MAX_LOG_MESSAGE + LOG_PREFIX
    finally:
        manager.stop()
