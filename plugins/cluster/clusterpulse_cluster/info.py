"""Cluster info: version, platform, console URL and OpenShift ClusterVersion facts
(docs/compatibility.md#cluster-collection)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from clusterpulse_model.pieces import ClusterInfoPiece

from clusterpulse_cluster.remote import get_optional
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.pieces import Piece

log = logging.getLogger(__name__)

CLUSTER_VERSION_PATH = "/apis/config.openshift.io/v1/clusterversions/version"
CONSOLE_ROUTE_PATH = "/apis/route.openshift.io/v1/namespaces/openshift-console/routes/console"
VERSION_PATH = "/version"


def derive_console_url(endpoint: str) -> str:
    """The console URL guessed from the API endpoint: ``api.<rest>`` -> OpenShift console, else as is."""
    host = endpoint.removeprefix("https://").removeprefix("http://").split(":", 1)[0]
    if host.startswith("api."):
        return f"https://console-openshift-console.apps.{host[len('api.') :]}"
    return endpoint


def route_console_url(route: Mapping[str, Any] | None) -> str:
    """``https://<host>`` (``http://`` without TLS) of the console Route, or ``""``."""
    spec = (route or {}).get("spec")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("host"), str):
        return ""
    scheme = "https" if "tls" in spec else "http"
    return f"{scheme}://{spec['host']}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _put_str(info: dict[str, Any], key: str, source: Mapping[str, Any], field: str) -> None:
    value = source.get(field)
    if isinstance(value, str):
        info[key] = value


def cluster_version_info(cv: Mapping[str, Any]) -> dict[str, Any]:
    """The keys an OpenShift ClusterVersion adds to the info map (each only when present)."""
    info: dict[str, Any] = {}
    spec = _mapping(cv.get("spec"))
    _put_str(info, "channel", spec, "channel")
    _put_str(info, "cluster_id", spec, "clusterID")
    status = cv.get("status")
    if isinstance(status, Mapping):
        desired = _mapping(status.get("desired"))
        _put_str(info, "version", desired, "version")
        _put_str(info, "image", desired, "image")
        updates = status.get("availableUpdates")
        info["update_available"] = isinstance(updates, list) and len(updates) > 0
        if isinstance(updates, list) and updates and isinstance(updates[0], Mapping):
            _put_str(info, "available_update_version", updates[0], "version")
        history = status.get("history")
        if isinstance(history, list) and history and isinstance(history[0], Mapping):
            _put_str(info, "version_state", history[0], "state")
            _put_str(info, "version_started_time", history[0], "startedTime")
            _put_str(info, "version_completion_time", history[0], "completionTime")
        conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
        if conditions:
            info["conditions"] = [
                {key: c.get(key) for key in ("type", "status", "message", "reason")} for c in conditions
            ]
        for condition in conditions:
            flag = {"Progressing": "is_progressing", "Degraded": "is_degraded", "Available": "is_available"}.get(
                str(condition.get("type"))
            )
            if flag and condition.get("status") == "True":
                info[flag] = True
    info["platform"] = "OpenShift"
    return info


def _safe_get(target: ClusterTarget, path: str) -> Any | None:
    try:
        return get_optional(target.client, path)
    except Exception as exc:
        log.debug("cluster %s: GET %s failed: %s", target.name, path, exc)
        return None


def collect_cluster_info(target: ClusterTarget) -> dict[str, Any]:
    """The info map of one cluster; never fails (missing parts are left out)."""
    info: dict[str, Any] = {"api_url": target.endpoint}
    cluster_version = _safe_get(target, CLUSTER_VERSION_PATH)
    if isinstance(cluster_version, Mapping):
        info.update(cluster_version_info(cluster_version))
    else:
        version = _safe_get(target, VERSION_PATH)
        if isinstance(version, Mapping):
            info["version"] = str(version.get("gitVersion", ""))
            info["platform"] = str(version.get("platform", ""))
        else:
            info["version"] = "unknown"
    console = route_console_url(_safe_get(target, CONSOLE_ROUTE_PATH))
    if console:
        info["console_url"] = console
    elif target.endpoint:
        info["console_url"] = derive_console_url(target.endpoint)
    return info


@attrs.frozen
class ClusterInfoCollector:
    """The ``cluster_info`` collector (never fails)."""

    def __call__(self, target: ClusterTarget) -> Sequence[Piece]:
        """One ClusterInfoPiece."""
        return [ClusterInfoPiece(target.name, collect_cluster_info(target))]
