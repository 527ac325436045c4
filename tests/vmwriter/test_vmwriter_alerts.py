"""Alert pieces in VictoriaMetrics: ``clusterpulse_alert_firing`` is 1 while firing, 0 once resolved."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from clusterpulse_model import Alert
from clusterpulse_model.pieces import AlertPiece, AlertResolution
from clusterpulse_vmwriter.backend import VMWriterBackend
from clusterpulse_vmwriter.settings import VMSettings

STARTED = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)


def _alert(**changes: Any) -> Alert:
    values: dict[str, Any] = {
        "id": "OperatorFailed-0123456789abcdef",
        "name": "OperatorFailed",
        "severity": "warning",
        "message": "operator bad is in phase Failed",
        "timestamp": STARTED,
        "source": "builtin",
        "resource_type": "operator",
        "resource_name": "bad",
        "namespace": "ops",
        "cluster": "prod",
        "rule": "OperatorFailed",
    }
    values.update(changes)
    return Alert(**values)


def test_victoria_metrics_gets_one_while_firing_and_zero_once_resolved(vm: Any) -> None:
    backend = VMWriterBackend(VMSettings(endpoint=vm.url, enabled=True, retry_backoff=0.05, flush_timeout=10.0))
    try:
        first, second = _alert(), _alert(id="OperatorFailed-1", resource_name="worse")
        backend.store([AlertPiece("prod", first), AlertPiece("prod", second)])
        assert backend.flush(10)
        backend.store([AlertResolution("prod", second)])
        assert backend.flush(10)
    finally:
        backend.close()
    series = vm.export('{__name__="clusterpulse_alert_firing"}')
    labels = {"cluster": "prod", "alert": "OperatorFailed", "severity": "warning"}
    by_resource = {dict(name[1])["resource"]: sorted(points.values()) for name, points in series.items()}
    assert {tuple(sorted(dict(name[1]).items())) for name in series} == {
        tuple(sorted({**labels, "resource": resource}.items())) for resource in ("ops/bad", "ops/worse")
    }
    assert by_resource == {"ops/bad": [1.0], "ops/worse": [0.0, 1.0]}
