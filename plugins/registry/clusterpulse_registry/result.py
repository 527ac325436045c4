"""The outcome of one registry health check (docs/compatibility.md#registry-checks, "Result JSON keys")."""

from __future__ import annotations

import attrs

from clusterpulse_core.serde import wire

#: Catalogs longer than this are counted but not listed (docs/compatibility.md#registry-checks).
MAX_LISTED_REPOSITORIES = 20


@wire(omit_empty=("version", "repository_count", "features", "repositories", "error"))
@attrs.frozen
class HealthCheckResult:
    """What a health check found; ``error`` is empty when the registry answered as expected."""

    available: bool = False
    response_time_ms: int = 0
    version: str = ""
    repository_count: int = 0
    features: dict[str, bool] = attrs.field(factory=dict)
    repositories: tuple[str, ...] = ()
    error: str = ""
