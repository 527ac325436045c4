"""The ingester's Prometheus metrics (served on the manager's /metrics)."""

from __future__ import annotations

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@attrs.frozen
class IngesterMetrics:
    """Connected agents, batches received/acked/rejected, bytes, processing time."""

    connected: Gauge
    batches_received: Counter
    batches_acked: Counter
    batches_rejected: Counter
    bytes_received: Counter
    batch_seconds: Histogram
    streams_rejected: Counter
    config_updates: Counter
    unregistered: Gauge
    plaintext: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry) -> IngesterMetrics:
        """Register the metrics in ``registry``."""
        return cls(
            connected=Gauge(
                "clusterpulse_ingester_connected_agents", "Collector agent streams registered now", registry=registry
            ),
            batches_received=Counter(
                "clusterpulse_ingester_batches_received_total", "Metrics batches received", registry=registry
            ),
            batches_acked=Counter(
                "clusterpulse_ingester_batches_acked_total",
                "Metrics batches stored and acknowledged with success",
                registry=registry,
            ),
            batches_rejected=Counter(
                "clusterpulse_ingester_batches_rejected_total",
                "Metrics batches answered with success=false, by reason",
                ["reason"],
                registry=registry,
            ),
            bytes_received=Counter(
                "clusterpulse_ingester_bytes_received_total",
                "Serialized size of the messages received from agents",
                registry=registry,
            ),
            batch_seconds=Histogram(
                "clusterpulse_ingester_batch_seconds", "Time to convert and store one batch", registry=registry
            ),
            streams_rejected=Counter(
                "clusterpulse_ingester_streams_rejected_total",
                "Agent streams ended by the ingester, by reason",
                ["reason"],
                registry=registry,
            ),
            config_updates=Counter(
                "clusterpulse_ingester_config_updates_total", "ConfigUpdate messages sent to agents", registry=registry
            ),
            unregistered=Gauge(
                "clusterpulse_ingester_unregistered_streams",
                "Streams open and not registered yet (bounded by max_unregistered_streams)",
                registry=registry,
            ),
            plaintext=Gauge(
                "clusterpulse_ingester_plaintext",
                "1 while the ingester serves without TLS (INGESTER_TLS_ENABLED=false)",
                registry=registry,
            ),
        )
