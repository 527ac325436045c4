"""``[plugins.cluster]`` settings, with the upstream environment variables."""

from __future__ import annotations

import attrs

from clusterpulse_core.config import setting


@attrs.frozen
class ClusterSettings:
    """Timing and paging knobs of ClusterConnection reconciles (controllers.md §2.2)."""

    reconciliation_interval: int = setting(
        30, env="RECONCILIATION_INTERVAL", minimum=30, help="default ClusterConnection requeue, seconds")
    operator_scan_interval: int = setting(
        300, env="OPERATOR_SCAN_INTERVAL", minimum=60, help="seconds between OLM operator scans of a cluster")
    connect_timeout: int = setting(
        10, env="CONNECT_TIMEOUT", minimum=5, help="default connection-test timeout, seconds")
    page_size: int = setting(500, minimum=1, help="items per page when listing nodes and pods")
    agent_silence_limit: float = setting(
        90.0, help="a push agent not heard from for this many seconds is treated as gone (pull fallback)")
