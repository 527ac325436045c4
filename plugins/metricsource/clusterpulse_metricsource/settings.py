"""``[plugins.metricsource]`` settings: which source kinds a MetricSource may read."""

from __future__ import annotations

import attrs

from clusterpulse_core.config import setting
from clusterpulse_core.rbac import never_read

#: Kinds no MetricSource may read unless ``allowed_source_kinds`` names them: a MetricSource copies
#: the fields it extracts into Redis, readable by everyone who can read the dashboards, so a
#: Secret source would publish credentials.
ALWAYS_DENIED = ("v1/Secret",)


@attrs.frozen
class MetricSourceSettings:
    """Source kinds refused (``phase: Error``) or explicitly allowed, as ``apiVersion/Kind``."""

    denied_source_kinds: tuple[str, ...] = setting(
        (), help='source kinds refused besides v1/Secret, as apiVersion/Kind (e.g. "v1/ConfigMap")'
    )
    allowed_source_kinds: tuple[str, ...] = setting(
        (), help='source kinds allowed even though denied ("v1/Secret" must be named here to be read)'
    )

    def refusal(self, api_version: str, kind: str, group: str | None = None, resource: str | None = None) -> str:
        """Why a MetricSource may not read ``api_version``/``kind``, or ``""`` when it may.

        Names compare case-insensitively; with the resolved ``group``/``resource`` (after
        discovery), whatever :func:`~clusterpulse_core.rbac.never_read` refuses (``secrets`` in any
        spelling, a ``*``) is the Secret denial.
        """
        name = f"{api_version}/{kind}"
        folded = name.lower()
        secret = folded in (d.lower() for d in ALWAYS_DENIED) or (
            resource is not None and bool(never_read(group or "", resource))
        )
        allowed = {a.lower() for a in self.allowed_source_kinds}
        if secret and not (allowed & {d.lower() for d in ALWAYS_DENIED}):
            return (
                f"source {name} is refused: a MetricSource would copy Secret data into Redis "
                f'(allow it with plugins.metricsource.allowed_source_kinds = ["v1/Secret"])'
            )
        if folded in allowed:
            return ""
        if folded in (d.lower() for d in self.denied_source_kinds):
            return f"source {name} is refused by plugins.metricsource.denied_source_kinds"
        return ""
