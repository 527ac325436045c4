"""``[plugins.alerts]``: evaluation timing and per-rule overrides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from clusterpulse_core.config import ConfigError, setting

SEVERITIES = ("critical", "warning", "info")


@attrs.frozen
class RuleOverride:
    """``[plugins.alerts.rules.<Name>]``: what may be changed about one registered rule."""

    enabled: bool = True
    for_seconds: float | None = None
    threshold: float | None = None
    severity: str | None = None


_OVERRIDE_KEYS = {"enabled": "enabled", "for": "for_seconds", "threshold": "threshold", "severity": "severity"}


def read_overrides(raw: Mapping[str, Any], path: str = "plugins.alerts.rules") -> dict[str, RuleOverride]:
    """Validate the ``rules`` table; errors name the full key (``plugins.alerts.rules.X.for``)."""
    overrides: dict[str, RuleOverride] = {}
    for name, table in raw.items():
        here = f"{path}.{name}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{here}: expected a table (enabled, for, threshold, severity), got {table!r}")
        values: dict[str, Any] = {}
        for key, value in table.items():
            field = _OVERRIDE_KEYS.get(key)
            if field is None:
                raise ConfigError(f"{here}.{key}: unknown key (expected one of: {', '.join(_OVERRIDE_KEYS)})")
            if field == "enabled":
                if not isinstance(value, bool):
                    raise ConfigError(f"{here}.{key}: expected bool (true/false), got {value!r}")
            elif field == "severity":
                if value not in SEVERITIES:
                    raise ConfigError(f"{here}.{key}: expected one of {', '.join(SEVERITIES)}, got {value!r}")
            else:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ConfigError(f"{here}.{key}: expected number, got {value!r}")
                if field == "for_seconds" and value < 0:
                    raise ConfigError(f"{here}.{key}: expected a value >= 0, got {value!r}")
                value = float(value)
            values[field] = value
        overrides[name] = RuleOverride(**values)
    return overrides


@attrs.frozen
class AlertsSettings:
    """Timing of the evaluation; rules are tuned in ``[plugins.alerts.rules.<Name>]``."""

    evaluation_interval: float = setting(
        5.0, help="seconds between re-evaluations of the last seen state (pending alerts fire in between reconciles)"
    )
    default_for: float = setting(
        -1.0, help="when >= 0, the `for` (seconds) of every built-in and plugin rule without its own `for`"
    )
    restore_grace: float = setting(
        120.0, help="seconds after start during which restored alerts of rules not (yet) loaded are kept"
    )
    status_interval: float = setting(30.0, help="seconds between AlertRule status refreshes")
    rules: dict[str, Any] = setting(  # noqa: RUF009
        factory=dict, help="per-rule tables: enabled, for (seconds), threshold, severity"
    )

    def overrides(self) -> dict[str, RuleOverride]:
        """The validated ``rules`` table."""
        return read_overrides(self.rules)
