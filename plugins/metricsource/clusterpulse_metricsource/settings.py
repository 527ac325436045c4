"""``[plugins.metricsource]`` settings: which source kinds a MetricSource may read."""

from __future__ import annotations

import attrs

from clusterpulse_core.config import setting

#: Kinds no MetricSource may read unless ``allowed_source_kinds`` names them: a MetricSource copies
#: the fields it extracts into Redis, readable by everyone who can read the dashboards, so a
#: Secret source would publish credentials.
ALWAYS_DENIED = ("v1/Secret",)


@attrs.frozen
class MetricSourceSettings:
    """Source kinds refused (``phase: Error``) or explicitly allowed, as ``apiVersion/Kind``."""

    denied_source_kinds: tuple[str, ...] = setting(
        (), help="source kinds refused besides v1/Secret, as apiVersion/Kind (e.g. \"v1/ConfigMap\")")
    allowed_source_kinds: tuple[str, ...] = setting(
        (), help="source kinds allowed even though denied (\"v1/Secret\" must be named here to be read)")

    def refusal(self, api_version: str, kind: str) -> str:
        """Why a MetricSource may not read ``api_version``/``kind``, or ``""`` when it may."""
        name = f"{api_version}/{kind}"
        if name in self.allowed_source_kinds:
            return ""
        if name in ALWAYS_DENIED:
            return (f"source {name} is refused: a MetricSource would copy Secret data into Redis "
                    f"(allow it with plugins.metricsource.allowed_source_kinds = [\"{name}\"])")
        if name in self.denied_source_kinds:
            return f"source {name} is refused by plugins.metricsource.denied_source_kinds"
        return ""
