"""A ClusterConnection's spec: decoding, validation and the stored record (docs/compatibility.md#crds)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import cattrs
from clusterpulse_model import ClusterSpecRecord, CredentialsRef, MonitoringRecord

from clusterpulse_core.serde import structure, wire

PULL = "pull"
PUSH = "push"


#: Bounds of the spec's fields, the same in the CRD schema (crd.py) and in :func:`validate_spec`.
MAX_INTERVAL = 86_400
MAX_TIMEOUT = 3_600
MAX_ENDPOINT = 2_048
MAX_DISPLAY_NAME = 253
MAX_LABELS = 64
MAX_LABEL_KEY = 317
MAX_LABEL_VALUE = 1_024
MAX_INGESTER_ADDRESS = 512
#: ``host:port`` (a bracketed IPv6 host allowed).
INGESTER_ADDRESS_PATTERN = r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$"
#: An image tag (the OCI distribution grammar).
COLLECTOR_VERSION_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$"
#: Shortest reconcile period; a smaller positive ``monitoring.interval`` is raised to it (and said so).
MIN_INTERVAL = 30


#: The spec's string fields (camelCase).
_STRING_FIELDS = ("endpoint", "displayName", "collectionMode", "ingesterAddress", "collectorVersion")


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
    # The converter turns numbers and objects into strings; a spec says what it means or is refused.
    for key in _STRING_FIELDS:
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise _invalid(key, f"must be a string, got {type(raw[key]).__name__}")
    labels = raw.get("labels")
    if labels is not None and (not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values())):
        raise _invalid("labels", "must map strings to strings")
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


def _invalid(field: str, problem: str) -> InvalidSpecError:
    return InvalidSpecError(f"invalid spec: spec.{field} {problem}")


def _in_range(field: str, value: int, high: int) -> None:
    if not 0 <= value <= high:
        raise _invalid(field, f"must be between 0 (the default) and {high} seconds, got {value}")


def validate_spec(spec: ClusterConnectionSpec) -> None:
    """Check every field (required fields, lengths, ranges, forms, push-mode address,
    docs/compatibility.md#c3); the error names the first bad field. The CRD schema states the
    same bounds, so an API server refuses most of these before they reach a reconcile."""
    if not spec.endpoint.strip():
        raise _invalid("endpoint", "is required")
    if len(spec.endpoint) > MAX_ENDPOINT:
        raise _invalid("endpoint", f"is longer than {MAX_ENDPOINT} characters ({len(spec.endpoint)})")
    api_url(spec.endpoint)
    if not spec.credentials_ref.name.strip():
        raise _invalid("credentialsRef.name", "is required")
    if len(spec.display_name) > MAX_DISPLAY_NAME:
        raise _invalid("displayName", f"is longer than {MAX_DISPLAY_NAME} characters ({len(spec.display_name)})")
    if len(spec.labels) > MAX_LABELS:
        raise _invalid("labels", f"has more than {MAX_LABELS} entries ({len(spec.labels)})")
    for key, value in spec.labels.items():
        if not key or len(key) > MAX_LABEL_KEY:
            raise _invalid("labels", f"key {key[:64]!r} must have 1 to {MAX_LABEL_KEY} characters")
        if len(value) > MAX_LABEL_VALUE:
            raise _invalid(f"labels.{key[:64]}", f"is longer than {MAX_LABEL_VALUE} characters ({len(value)})")
    _in_range("monitoring.interval", spec.monitoring.interval, MAX_INTERVAL)
    _in_range("monitoring.timeout", spec.monitoring.timeout, MAX_TIMEOUT)
    if spec.is_push and not spec.ingester_address.strip():
        raise _invalid("ingesterAddress", "is required when collectionMode is push")
    address = spec.ingester_address
    if address and (
        len(address) > MAX_INGESTER_ADDRESS
        or re.fullmatch(INGESTER_ADDRESS_PATTERN, address) is None
        or not 0 < int(address.rsplit(":", 1)[1]) < 65536
    ):
        raise _invalid("ingesterAddress", f"must be host:port, got {address[:100]!r}")
    if spec.collector_version and re.fullmatch(COLLECTOR_VERSION_PATTERN, spec.collector_version) is None:
        raise _invalid("collectorVersion", f"must be an image tag, got {spec.collector_version[:100]!r}")


def clamped(spec: ClusterConnectionSpec) -> str:
    """What the reconcile changed of the spec's values, for the status message (``""``: nothing)."""
    interval = spec.monitoring.interval
    if 0 < interval < MIN_INTERVAL:
        return f"spec.monitoring.interval {interval} raised to {MIN_INTERVAL}"
    return ""


def reconcile_interval(default_interval: int, spec_interval: int) -> int:
    """Seconds between reconciles: the spec's when set (at least 30), else the default
    (docs/compatibility.md#cluster-reconcile)."""
    if spec_interval > 0:
        return max(spec_interval, MIN_INTERVAL)
    return default_interval


def error_requeue_seconds(interval: int) -> int:
    """Seconds before retrying a failed reconcile: ``min(interval, 60)`` (docs/compatibility.md#cluster-reconcile)."""
    return min(interval, 60)


def connect_timeout(default_timeout: int, spec_timeout: int) -> int:
    """Connection-test timeout: the spec's when positive (no minimum), else the default (docs/compatibility.md#crds)."""
    return spec_timeout if spec_timeout > 0 else default_timeout
