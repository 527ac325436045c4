"""``status.conditions`` entries (``metav1.Condition``), written beside a kind's phase and health."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.serde import parse_time, wire

READY = "Ready"


@wire(case="camel")
@attrs.frozen
class Condition:
    """One condition: ``type`` (``Ready``), ``status`` (``True``/``False``/``Unknown``) and why."""

    type: str
    status: str
    reason: str
    message: str
    last_transition_time: datetime
    observed_generation: int = 0


def ready_condition(ready: bool, reason: str, message: str, generation: int, now: datetime,
                    previous: Sequence[Mapping[str, Any]] | None) -> Condition:
    """The ``Ready`` condition; ``lastTransitionTime`` stays the previous one unless the status flips."""
    status = "True" if ready else "False"
    since = now
    for condition in previous or ():
        if isinstance(condition, Mapping) and condition.get("type") == READY and condition.get("status") == status:
            try:
                since = parse_time(str(condition.get("lastTransitionTime")))
            except ValueError:
                since = now
    return Condition(READY, status, reason, message[:32768], since, generation)
