"""The RegistryConnection object as read from the hub: spec and status (docs/compatibility.md#crds)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import attrs
import cattrs
from clusterpulse_model import RegistryCredentialsRef, RegistryMonitoringRecord, RegistrySpecRecord

from clusterpulse_core import serde
from clusterpulse_core.kinds import TerminalError
from clusterpulse_core.openapi import DNS1123_LABEL_PATTERN, DNS1123_SUBDOMAIN_PATTERN
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


@wire(
    case="camel",
    omit_empty=(
        "phase",
        "health",
        "last_check_time",
        "response_time",
        "message",
        "repository_count",
        "version",
        "features",
    ),
)
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


#: Bounds of the spec's fields, the same in the CRD schema (kind.py) and in :func:`validate_spec`.
MAX_ENDPOINT = 2_048
MAX_DISPLAY_NAME = 253
MAX_TYPE = 63
MAX_LABELS = 64
MAX_LABEL_KEY = 317
MAX_LABEL_VALUE = 1_024
MAX_INTERVAL = 86_400
MAX_TIMEOUT = 3_600
MAX_CATALOG_ENTRIES = 10_000
MAX_HEALTH_CHECK_PATHS = 16
MAX_HEALTH_CHECK_PATH = 256
#: A path on the registry: starts with ``/``, no whitespace.
HEALTH_CHECK_PATH_PATTERN = r"^/[^\s]*$"

#: Integer fields of ``spec.monitoring`` and their upper bound (0 means the default).
_MONITORING_INTS = {"interval": MAX_INTERVAL, "timeout": MAX_TIMEOUT, "maxCatalogEntries": MAX_CATALOG_ENTRIES}


class InvalidSpecError(TerminalError):
    """The spec cannot be reconciled (retrying cannot fix it); the message names the offending field."""


def _invalid(field: str, problem: str) -> InvalidSpecError:
    return InvalidSpecError(f"invalid spec: spec.{field} {problem}")


def _string(raw: Mapping[str, Any], key: str, field: str, limit: int, required: bool = False) -> str:
    value = raw.get(key)
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise _invalid(field, f"must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise _invalid(field, "is required")
    if len(value) > limit:
        raise _invalid(field, f"is longer than {limit} characters ({len(value)})")
    return value


def _object(raw: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid(field, f"must be an object, got {type(value).__name__}")
    return value


def _boolean(raw: Mapping[str, Any], key: str, field: str) -> None:
    value = raw.get(key)
    if value is not None and not isinstance(value, bool):
        raise _invalid(field, f"must be true or false, got {type(value).__name__}")


def _endpoint(endpoint: str) -> None:
    if any(ch.isspace() for ch in endpoint):
        raise _invalid("endpoint", "must not contain whitespace")
    if "://" in endpoint and not endpoint.startswith(("http://", "https://")):
        raise _invalid("endpoint", f"must be an http(s) URL or a host, got {endpoint[:100]!r}")
    with_scheme = endpoint if "://" in endpoint else "https://" + endpoint
    try:
        host = urlsplit(with_scheme).hostname
        urlsplit(with_scheme).port  # noqa: B018 - raises on a port out of range
    except ValueError as exc:
        raise _invalid("endpoint", f"is not a valid URL ({exc})") from exc
    if not host:
        raise _invalid("endpoint", f"has no host, got {endpoint[:100]!r}")


def validate_spec(raw: Any) -> None:
    """Check every field of the raw spec, without coercing types (types, lengths, ranges, forms);
    the error names the first bad field. The CRD schema states the same bounds, so an API server
    refuses most of these before they reach a reconcile."""
    if not isinstance(raw, Mapping):
        raise InvalidSpecError("invalid spec: spec must be an object")
    _endpoint(_string(raw, "endpoint", "endpoint", MAX_ENDPOINT, required=True))
    _string(raw, "displayName", "displayName", MAX_DISPLAY_NAME)
    _string(raw, "type", "type", MAX_TYPE)
    _boolean(raw, "insecure", "insecure")
    _boolean(raw, "skipTLSVerify", "skipTLSVerify")
    if raw.get("credentialsRef") is not None:
        ref = _object(raw, "credentialsRef", "credentialsRef")
        name = _string(ref, "name", "credentialsRef.name", 253, required=True)
        if re.fullmatch(DNS1123_SUBDOMAIN_PATTERN, name) is None:
            raise _invalid("credentialsRef.name", f"must be a Secret name, got {name[:100]!r}")
        namespace = _string(ref, "namespace", "credentialsRef.namespace", 63)
        if namespace and re.fullmatch(DNS1123_LABEL_PATTERN, namespace) is None:
            raise _invalid("credentialsRef.namespace", f"must be a namespace name, got {namespace[:100]!r}")
    monitoring = _object(raw, "monitoring", "monitoring")
    for key, high in _MONITORING_INTS.items():
        value = monitoring.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise _invalid(f"monitoring.{key}", f"must be an integer, got {type(value).__name__}")
        if not 0 <= value <= high:
            raise _invalid(f"monitoring.{key}", f"must be between 0 (the default) and {high}, got {value}")
    _boolean(monitoring, "checkCatalog", "monitoring.checkCatalog")
    labels = _object(raw, "labels", "labels")
    if len(labels) > MAX_LABELS:
        raise _invalid("labels", f"has more than {MAX_LABELS} entries ({len(labels)})")
    for key in labels:
        if not isinstance(key, str) or not key or len(key) > MAX_LABEL_KEY:
            raise _invalid("labels", f"key {str(key)[:64]!r} must have 1 to {MAX_LABEL_KEY} characters")
        _string(labels, key, f"labels.{key[:64]}", MAX_LABEL_VALUE)
    paths = raw.get("healthCheckPaths")
    if paths is not None:
        if not isinstance(paths, list):
            raise _invalid("healthCheckPaths", f"must be a list, got {type(paths).__name__}")
        if len(paths) > MAX_HEALTH_CHECK_PATHS:
            raise _invalid("healthCheckPaths", f"has more than {MAX_HEALTH_CHECK_PATHS} entries ({len(paths)})")
        for index, path in enumerate(paths):
            if (
                not isinstance(path, str)
                or len(path) > MAX_HEALTH_CHECK_PATH
                or re.fullmatch(HEALTH_CHECK_PATH_PATTERN, path) is None
            ):
                raise _invalid(
                    f"healthCheckPaths[{index}]",
                    f"must be a path starting with / of at most {MAX_HEALTH_CHECK_PATH} characters",
                )


def parse_spec(obj: Mapping[str, Any]) -> RegistryConnectionSpec:
    """The object's spec, every field checked (:func:`validate_spec`); a bad spec is an
    :class:`InvalidSpecError`, a :class:`TerminalError` (retrying cannot fix it)."""
    raw = obj.get("spec")
    validate_spec({} if raw is None else raw)
    try:
        return serde.structure(raw or {}, RegistryConnectionSpec)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        raise InvalidSpecError(f"invalid spec: {exc}") from exc


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
