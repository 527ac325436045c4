"""Push mode: what the hub knows about a connected collector agent (docs/compatibility.md#collector-protocol)."""

from __future__ import annotations

from datetime import datetime

import attrs

from clusterpulse_core.clock import ZERO_TIME


@attrs.frozen
class AgentConnection:
    """One collector agent's stream, as the ingester's connection table holds it.

    ``last_heartbeat`` is the registration time, refreshed by every health report and every
    metrics batch; ``buffered_batches`` is what the agent's last health report said it holds.
    ``health`` is the health of the cluster's latest stored status (the verdict of its last batch).
    """

    cluster: str
    version: str = ""
    connected_at: datetime = ZERO_TIME
    last_heartbeat: datetime = ZERO_TIME
    buffered_batches: int = 0
    health: str = "healthy"
