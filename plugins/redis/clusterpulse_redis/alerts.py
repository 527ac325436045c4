"""Reading the firing alerts back (``alerts:<c>:<id>`` hashes, docs/compatibility.md#r4)."""

from __future__ import annotations

import logging

import redis
from clusterpulse_model import Alert

from clusterpulse_core.serde import structure
from clusterpulse_redis import keys

log = logging.getLogger(__name__)

SCAN_COUNT = 500


def read_alerts(client: redis.Redis) -> list[Alert]:
    """Every stored alert, sorted by cluster and id; a hash that does not read as an alert is skipped."""
    found = sorted(client.scan_iter(match=keys.ALERTS_PATTERN, count=SCAN_COUNT))
    if not found:
        return []
    pipe = client.pipeline(transaction=False)
    for key in found:
        pipe.hgetall(key)
    alerts = []
    for key, raw in zip(found, pipe.execute(), strict=True):
        if not raw:
            continue  # expired between SCAN and HGETALL
        fields = {_text(k): _text(v) for k, v in raw.items()}
        try:
            alerts.append(structure(fields, Alert))
        except Exception as exc:
            log.warning("skipping %s: not an alert hash (%s)", _text(key), exc)
    return sorted(alerts, key=lambda a: (a.cluster, a.id))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
