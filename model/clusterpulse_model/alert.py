"""A firing alert as readers find it (docs/compatibility.md#r4: hash ``alerts:<c>:<id>``)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

import attrs

from clusterpulse_core.clock import ZERO_TIME


class Severity(StrEnum):
    """Alert severities, as the ClusterPulse API filters them."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


@attrs.frozen
class Alert:
    """One alert; every field is a string on the wire (R4), ``namespace`` empty when cluster-scoped.

    ``id`` is stable (same rule, same object, same id); ``timestamp`` is when it started
    firing; ``name`` is the rule's alert name; ``source`` says which rule produced it
    (``builtin``, ``AlertRule <ns>/<name>`` or ``plugin <name>``); ``cluster`` is the
    cluster (or registry) the alert is stored under; ``rule`` is the key of the rule that
    produced it (the rule name, or ``AlertRule/<ns>/<name>``).
    """

    id: str
    name: str
    severity: str
    message: str
    timestamp: datetime = ZERO_TIME
    source: str = ""
    resource_type: str = ""
    resource_name: str = ""
    namespace: str = ""
    cluster: str = ""
    rule: str = ""
