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


@attrs.frozen
class IngesterTransport:
    """How agents reach the hub's ingester, as the ingester's own settings say (the one source of truth).

    ``tls_enabled``: the ingester speaks TLS (agents get the TLS variables); ``client_certificates``: it
    requires a client certificate naming the agent's cluster (mTLS).
    """

    tls_enabled: bool = True
    client_certificates: bool = False


@attrs.frozen
class AgentCertificate:
    """A client certificate (and its private key, PEM) for one cluster's agent, naming that cluster."""

    cert_pem: str
    key_pem: str
