"""The writer's own Prometheus metrics (served on the manager's ``/metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class WriterMetrics:
    """Samples written and dropped, and batches waiting.

    The metrics live in a private registry from construction, so a backend works before the
    manager starts; :meth:`publish` adds them to the manager's registry as well (same
    objects, so counts made before start-up are kept).
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.written = Counter(
            "clusterpulse_vm_samples_written_total", "Samples accepted by VictoriaMetrics", registry=self.registry
        )
        self.dropped = Counter(
            "clusterpulse_vm_dropped_samples_total",
            "Samples given up on (retry queue overflow, refused body, shutdown)",
            registry=self.registry,
        )
        self.queued = Gauge(
            "clusterpulse_vm_queue_batches", "Batches waiting to be written to VictoriaMetrics", registry=self.registry
        )
        self._published: list[CollectorRegistry] = []

    def publish(self, registry: CollectorRegistry) -> None:
        """Register the metrics on ``registry`` too (once per registry)."""
        if any(existing is registry for existing in self._published):
            return
        for metric in (self.written, self.dropped, self.queued):
            registry.register(metric)
        self._published.append(registry)
