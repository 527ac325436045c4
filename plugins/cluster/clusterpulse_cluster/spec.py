"""A ClusterConnection's spec: decoding, validation and the stored record (docs/compatibility.md#crds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import cattrs
from clusterpulse_model import ClusterSpecRecord, CredentialsRef, MonitoringRecord

from clusterpulse_core.serde import structure, wire

PULL = "pull"
PUSH = "push"


class InvalidSpecError(Exception):
    """The spec cannot be reconciled; the message names the offending field."""


@wire(case="camel")
@attrs.frozen
class ClusterConnectionSpec:
    """``spec`` of a ClusterConnection as written by the user (raw values, no runtime defaults)."""

    endpoint: str = ""
    credentials_ref: CredentialsRef = attrs.field(factory=CredentialsRef)
    display_name: str = ""
    labels: dict[str, str] = attrs.field(factory=dict)
    monitoring: MonitoringRecord = attrs.field(factory=MonitoringRecord)
    collection_mode: str = PULL
    ingester_address: str = ""
    collector_version: str = ""

    @property
    def is_push(self) -> bool:
        """Only exactly ``push`` selects push mode; anything else is pull (docs/compatibility.md#cluster-reconcile)."""
        return self.collection_mode == PUSH

    def record(self) -> ClusterSpecRecord:
        """What ``cluster:<c>:spec`` holds (docs/compatibility.md#redis-keys)."""
        return ClusterSpecRecord(
            display_name=self.display_name,
            endpoint=self.endpoint,
            credentials_ref=self.credentials_ref,
            labels=dict(self.labels),
            monitoring=self.monitoring,
        )


def decode_spec(obj: Mapping[str, Any]) -> ClusterConnectionSpec:
    """The object's spec; a value of the wrong type raises :class:`InvalidSpecError` naming it."""
    raw = obj.get("spec") or {}
    if not isinstance(raw, Mapping):
        raise InvalidSpecError("invalid spec: spec must be an object")
    try:
        return structure(dict(raw), ClusterConnectionSpec)
    except cattrs.BaseValidationError as exc:
        details = "; ".join(cattrs.transform_error(exc, path="spec"))
        raise InvalidSpecError(f"invalid spec: {details}") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidSpecError(f"invalid spec: {exc}") from exc


def api_url(endpoint: str) -> str:
    """The API server URL to connect to: ``https://`` is assumed when no scheme is given (as
    client-go does); anything without a usable host is an :class:`InvalidSpecError`."""
    text = endpoint.strip()
    url = text if "://" in text else f"https://{text}"
    parsed = urlsplit(url)
    host_ok = bool(parsed.hostname) and not any(c in (parsed.hostname or "") for c in " ${}")
    try:
        parsed.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        host_ok = False
    if parsed.scheme not in ("http", "https") or not host_ok:
        raise InvalidSpecError(f"invalid spec: spec.endpoint must be an http(s) URL of the API server, got {text!r}")
    return url.rstrip("/")


def validate_spec(spec: ClusterConnectionSpec) -> None:
    """Check what a reconcile needs (required fields, push-mode address, docs/compatibility.md#c3)."""
    if not spec.endpoint.strip():
        raise InvalidSpecError("invalid spec: spec.endpoint is required")
    api_url(spec.endpoint)
    if not spec.credentials_ref.name.strip():
        raise InvalidSpecError("invalid spec: spec.credentialsRef.name is required")
    if spec.is_push and not spec.ingester_address.strip():
        raise InvalidSpecError("invalid spec: spec.ingesterAddress is required when collectionMode is push")


def reconcile_interval(default_interval: int, spec_interval: int) -> int:
    """Seconds between reconciles: the spec's when set (at least 30), else the default
    (docs/compatibility.md#cluster-reconcile)."""
    if spec_interval > 0:
        return max(spec_interval, 30)
    return default_interval


def error_requeue_seconds(interval: int) -> int:
    """Seconds before retrying a failed reconcile: ``min(interval, 60)`` (docs/compatibility.md#cluster-reconcile)."""
    return min(interval, 60)


def connect_timeout(default_timeout: int, spec_timeout: int) -> int:
    """Connection-test timeout: the spec's when positive (no minimum), else the default (docs/compatibility.md#crds)."""
    return spec_timeout if spec_timeout > 0 else default_timeout
