"""Generic records in VictoriaMetrics: one gauge per number, stamped with the record's time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from clusterpulse_vmwriter.backend import VMWriterBackend
from clusterpulse_vmwriter.settings import VMSettings

from clusterpulse_core.pieces import RecordDeletion, RecordPiece

OBSERVED = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)


def test_record_numbers_become_gauges_in_victoria_metrics(vm: Any) -> None:
    backend = VMWriterBackend(VMSettings(endpoint=vm.url, enabled=True, retry_backoff=0.05, flush_timeout=10.0))
    try:
        backend.store(
            [
                RecordPiece(
                    "ConfigAudit",
                    "clusterpulse",
                    "team-a",
                    {"names": ["a", "b"]},
                    {"configmaps": 2, "ratio": 0.25},
                    timestamp=OBSERVED,
                ),
                RecordDeletion("ConfigAudit", "clusterpulse", "gone"),
            ]
        )
        assert backend.flush(10)
    finally:
        backend.close()
    series = vm.export('{__name__=~"clusterpulse_configaudit_.*"}')
    found = {(name[0], tuple(sorted(dict(name[1]).items()))): points for name, points in series.items()}
    labels = (("name", "team-a"), ("namespace", "clusterpulse"))
    stamp = int(OBSERVED.timestamp() * 1000)
    assert found == {
        ("clusterpulse_configaudit_configmaps", labels): {stamp: 2.0},
        ("clusterpulse_configaudit_ratio", labels): {stamp: 0.25},
    }
