"""The RegistryConnection object as read from the hub: spec and status (docs/compatibility.md#crds)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs
import cattrs
from clusterpulse_model import RegistryCredentialsRef, RegistryMonitoringRecord, RegistrySpecRecord

from clusterpulse_core import serde
from clusterpulse_core.kinds import TerminalError
from clusterpulse_core.serde import wire


@wire(case="camel")
@attrs.frozen
class CredentialsRef:
    """``spec.credentialsRef``: the Secret with ``username`` and ``password``."""

    name: str = ""
    namespace: str = ""


@wire(case="camel")
@attrs.frozen
class RegistryMonitoring:
    """``spec.monitoring`` as written by the user (runtime defaults applied in :mod:`.policy`)."""

    interval: int = 0
    timeout: int = 0
    check_catalog: bool = False
    max_catalog_entries: int = 0


@wire(case="camel", rename={"skip_tls_verify": "skipTLSVerify"})
@attrs.frozen
class RegistryConnectionSpec:
    """``spec`` of a RegistryConnection."""

    endpoint: str = ""
    display_name: str = ""
    type: str = ""
    credentials_ref: CredentialsRef | None = None
    insecure: bool = False
    skip_tls_verify: bool = False
    monitoring: RegistryMonitoring = RegistryMonitoring()
    labels: dict[str, str] = attrs.field(factory=dict)
    health_check_paths: tuple[str, ...] = ()


@wire(case="camel", omit_empty=("phase", "health", "last_check_time", "response_time", "message",
                                "repository_count", "version", "features"))
@attrs.frozen
class RegistryConnectionStatus:
    """``status`` of a RegistryConnection; empty fields are left out, ``available`` never is."""

    phase: str = ""
    health: str = ""
    available: bool = False
    last_check_time: datetime | None = None
    response_time: int = 0
    message: str = ""
    repository_count: int = 0
    version: str = ""
    features: dict[str, bool] = attrs.field(factory=dict)


def parse_spec(obj: Mapping[str, Any]) -> RegistryConnectionSpec:
    """The object's spec; a spec of the wrong shape is a :class:`TerminalError` (retrying cannot fix it)."""
    try:
        return serde.structure(obj.get("spec") or {}, RegistryConnectionSpec)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        raise TerminalError(f"invalid spec: {exc}") from exc


def parse_status(obj: Mapping[str, Any]) -> RegistryConnectionStatus:
    """The object's current status; an unreadable status counts as empty (it will be rewritten)."""
    try:
        return serde.structure(obj.get("status") or {}, RegistryConnectionStatus)
    except (cattrs.BaseValidationError, ValueError, TypeError):
        return RegistryConnectionStatus()


def spec_record(spec: RegistryConnectionSpec) -> RegistrySpecRecord:
    """``registry:<r>:spec`` (docs/compatibility.md#redis-keys): the raw spec values, snake_case."""
    ref = spec.credentials_ref
    return RegistrySpecRecord(
        display_name=spec.display_name,
        endpoint=spec.endpoint,
        type=spec.type,
        insecure=spec.insecure,
        skip_tls=spec.skip_tls_verify,
        labels=dict(spec.labels),
        monitoring=RegistryMonitoringRecord(
            interval=spec.monitoring.interval,
            timeout=spec.monitoring.timeout,
            check_catalog=spec.monitoring.check_catalog,
            max_catalog_entries=spec.monitoring.max_catalog_entries,
        ),
        credentials_ref=RegistryCredentialsRef(ref.name, ref.namespace) if ref is not None else None,
    )
