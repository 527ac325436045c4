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


def condition(
    kind: str,
    status: bool,
    reason: str,
    message: str,
    generation: int,
    now: datetime,
    previous: Sequence[Mapping[str, Any]] | None,
) -> Condition:
    """Condition ``kind``; ``lastTransitionTime`` stays the previous one unless the status flips."""
    text = "True" if status else "False"
    since = now
    for found in previous or ():
        if isinstance(found, Mapping) and found.get("type") == kind and found.get("status") == text:
            try:
                since = parse_time(str(found.get("lastTransitionTime")))
            except ValueError:
                since = now
    return Condition(kind, text, reason, message[:32768], since, generation)


def ready_condition(
    ready: bool, reason: str, message: str, generation: int, now: datetime, previous: Sequence[Mapping[str, Any]] | None
) -> Condition:
    """The ``Ready`` condition; ``lastTransitionTime`` stays the previous one unless the status flips."""
    return condition(READY, ready, reason, message, generation, now, previous)
