"""RegistryConnection records (docs/compatibility.md#redis-keys)."""

from __future__ import annotations

from datetime import datetime

import attrs

from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.serde import wire


@attrs.frozen
class RegistryCredentialsRef:
    """Reference to the Secret holding a registry's username/password."""

    name: str = ""
    namespace: str = ""


@attrs.frozen
class RegistryMonitoringRecord:
    """``spec.monitoring`` of a RegistryConnection as stored."""

    interval: int = 0
    timeout: int = 0
    check_catalog: bool = False
    max_catalog_entries: int = 0


@wire(omit_empty=("credentials_ref",))
@attrs.frozen
class RegistrySpecRecord:
    """``registry:<r>:spec`` (docs/compatibility.md#redis-keys); ``credentials_ref`` only when set."""

    display_name: str = ""
    endpoint: str = ""
    type: str = ""
    insecure: bool = False
    skip_tls: bool = False
    labels: dict[str, str] = attrs.field(factory=dict)
    monitoring: RegistryMonitoringRecord = RegistryMonitoringRecord()
    credentials_ref: RegistryCredentialsRef | None = None


@wire(omit_empty=("error",))
@attrs.frozen
class RegistryStatusRecord:
    """``registry:<r>:status`` (docs/compatibility.md#redis-keys); ``error`` only when non-empty."""

    available: bool = False
    response_time: int = 0
    version: str = ""
    repository_count: int = 0
    features: dict[str, bool] = attrs.field(factory=dict)
    repositories: tuple[str, ...] = ()
    last_check: datetime = ZERO_TIME
    error: str = ""


@attrs.frozen
class RegistryMetricsRecord:
    """One ``registry:<r>:metrics`` sample (docs/compatibility.md#redis-keys)."""

    timestamp: int = 0
    response_time: int = 0
    available: bool = False
