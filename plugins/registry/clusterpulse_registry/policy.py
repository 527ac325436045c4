"""The reconcile rules that are plain functions: timing, health, message and when to write status.

docs/compatibility.md#registry-checks, with docs/compatibility.md#c9 (a failing registry is ``Error``).
"""

from __future__ import annotations

from datetime import datetime

from clusterpulse_registry.resource import RegistryConnectionStatus
from clusterpulse_registry.result import HealthCheckResult

DEFAULT_INTERVAL = 60
MIN_INTERVAL = 30
DEFAULT_TIMEOUT = 10
DEFAULT_MAX_CATALOG_ENTRIES = 100
#: Slower than this (ms) is ``degraded``.
SLOW_RESPONSE_MS = 5000

HEALTHY = "healthy"
DEGRADED = "degraded"
UNHEALTHY = "unhealthy"
PHASE_CONNECTED = "Connected"
PHASE_ERROR = "Error"


def reconcile_interval(spec_interval: int) -> int:
    """Seconds between checks: 60 when unset (or not positive), else at least 30."""
    return max(spec_interval, MIN_INTERVAL) if spec_interval > 0 else DEFAULT_INTERVAL


def check_timeout(spec_timeout: int) -> int:
    """Seconds one whole health check may take: the spec's value when positive, else 10."""
    return spec_timeout if spec_timeout > 0 else DEFAULT_TIMEOUT


def catalog_limit(spec_max_entries: int) -> int:
    """Catalog entries to fetch at most: the spec's value when positive, else 100."""
    return spec_max_entries if spec_max_entries > 0 else DEFAULT_MAX_CATALOG_ENTRIES


def classify_health(available: bool, response_time_ms: int) -> str:
    """``unhealthy`` when not available, ``degraded`` when slower than 5 s, else ``healthy``."""
    if not available:
        return UNHEALTHY
    if response_time_ms > SLOW_RESPONSE_MS:
        return DEGRADED
    return HEALTHY


def phase_for(result: HealthCheckResult) -> str:
    """``Connected`` when the registry is available, ``Error`` when not (docs/compatibility.md#c9)."""
    return PHASE_CONNECTED if result.available else PHASE_ERROR


def health_message(health: str, result: HealthCheckResult) -> str:
    """The status message, in the exact texts of docs/compatibility.md#registry-checks."""
    if not result.available:
        return f"Registry unavailable: {result.error}" if result.error else "Registry is not available"
    if health == HEALTHY:
        message = f"Registry is healthy (response time: {result.response_time_ms}ms)"
        if result.repository_count > 0:
            message += f", {result.repository_count} repositories"
        return message
    if result.response_time_ms > SLOW_RESPONSE_MS:
        return f"Registry is slow (response time: {result.response_time_ms}ms)"
    return "Registry health degraded"


def should_update_status(old: RegistryConnectionStatus, result: HealthCheckResult, health: str, message: str) -> bool:
    """Whether the new check differs enough from the stored status to write it
    (docs/compatibility.md#registry-checks)."""
    if old.phase != phase_for(result) or old.health != health or old.available != result.available:
        return True
    if old.message != message or old.version != result.version:
        return True
    new_count = result.repository_count
    if new_count > 0:
        diff = abs(old.repository_count - new_count)
        if diff > 10 or diff / (old.repository_count + 1) > 0.1:
            return True
    if old.response_time > 0:
        diff = abs(old.response_time - result.response_time_ms)
        if diff > 1000 or diff / old.response_time > 0.5:
            return True
    return dict(old.features) != dict(result.features)


def desired_status(
    result: HealthCheckResult, health: str, message: str, checked_at: datetime
) -> RegistryConnectionStatus:
    """The status a check leads to (docs/compatibility.md#registry-checks, "Written fields"), phase per
    docs/compatibility.md#c9."""
    return RegistryConnectionStatus(
        phase=phase_for(result),
        health=health,
        available=result.available,
        last_check_time=checked_at,
        response_time=result.response_time_ms,
        message=message,
        repository_count=result.repository_count,
        version=result.version,
        features=dict(result.features),
    )
