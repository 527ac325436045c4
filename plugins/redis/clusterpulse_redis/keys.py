"""Every Redis key name and channel of the contract (docs/compatibility.md#redis-keys), in one place."""

from __future__ import annotations

import re

CLUSTERS_ALL = "clusters:all"
REGISTRIES_ALL = "registries:all"
METRICSOURCES_ALL = "metricsources:all"
METRICSOURCES_ENABLED = "metricsources:enabled"
CLUSTER_EVENTS_CHANNEL = "cluster-events"
METRICSOURCE_EVENTS_CHANNEL = "metricsource-events"

#: Fixed TTLs (not configurable upstream).
CLUSTER_INFO_TTL = 3600
CLUSTER_METRICS_TTL = 300
EVENTS_TTL = 86400
#: Newest events kept per ``events:<name>`` list.
EVENTS_KEPT = 100
#: OLM operators keep this many target namespaces in ``available_in_namespaces``.
OPERATOR_NAMESPACES_SHOWN = 20


def cluster(name: str, suffix: str) -> str:
    """``cluster:<name>:<suffix>`` (``spec``, ``status``, ``nodes:summary`` ...)."""
    return f"cluster:{name}:{suffix}"


def node(cluster_name: str, node_name: str) -> str:
    """``cluster:<c>:node:<node>`` — the node hash."""
    return f"cluster:{cluster_name}:node:{node_name}"


def node_metrics(cluster_name: str, node_name: str) -> str:
    """``cluster:<c>:node:<node>:metrics`` — the node time series."""
    return f"cluster:{cluster_name}:node:{node_name}:metrics"


def node_conditions(cluster_name: str, node_name: str) -> str:
    """``cluster:<c>:node:<node>:conditions`` — one field per condition type (docs/compatibility.md#r2)."""
    return f"cluster:{cluster_name}:node:{node_name}:conditions"


def cluster_operator(cluster_name: str, operator: str) -> str:
    """``cluster:<c>:cluster_operator:<op>``."""
    return f"cluster:{cluster_name}:cluster_operator:{operator}"


def registry(name: str, suffix: str) -> str:
    """``registry:<name>:<suffix>`` (``spec``, ``status``, ``metrics:latest`` ...)."""
    return f"registry:{name}:{suffix}"


def events(name: str) -> str:
    """``events:<name>`` — newest-first event list of a cluster or registry."""
    return f"events:{name}"


def metricsource(namespace: str, name: str) -> str:
    """``metricsource:<ns>:<name>`` — the compiled definition."""
    return f"metricsource:{namespace}:{name}"


def metricsource_meta(namespace: str, name: str) -> str:
    """``metricsource:<ns>:<name>:meta`` — the definition's meta hash."""
    return f"metricsource:{namespace}:{name}:meta"


def metricsources_by_type(resource_type_name: str) -> str:
    """``metricsources:by:resourcetype:<rtn>``."""
    return f"metricsources:by:resourcetype:{resource_type_name}"


def custom(cluster_name: str, source_id: str, suffix: str) -> str:
    """``cluster:<c>:custom:<ns>/<name>:<suffix>`` (``resources``, ``meta``, ``aggregations``)."""
    return f"cluster:{cluster_name}:custom:{source_id}:{suffix}"


#: Names that may go into an ``alerts:<c>:<id>`` key: Kubernetes object names and alert ids.
_ALERT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def alert(cluster_name: str, alert_id: str) -> str:
    """``alerts:<c>:<id>`` — one firing alert's hash (docs/compatibility.md#r4).

    Both names are checked first: a ``ValueError`` names the one that could break the key
    space (a ``:``, a glob character, whitespace, empty or too long).
    """
    for what, value in (("cluster", cluster_name), ("alert id", alert_id)):
        if not _ALERT_NAME.fullmatch(value):
            raise ValueError(
                f"alert {what} {value!r} is not a valid key name (letters, digits, '.', '_', '-'; at most 253)"
            )
    return f"alerts:{cluster_name}:{alert_id}"


def alerts_of(cluster_name: str) -> str:
    """``SCAN MATCH`` pattern of every alert hash of one cluster."""
    return f"alerts:{glob_literal(cluster_name)}:*"


ALERTS_PATTERN = "alerts:*:*"

_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def glob_literal(text: str) -> str:
    """``text`` with the glob characters of ``SCAN MATCH`` escaped, so it matches only itself."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def record(prefix: str, record_id: str) -> str:
    """``<kind>:<namespace>/<name>`` — one generic record (``RecordPiece``)."""
    return f"{prefix}:{record_id}"


def record_index(prefix: str, index: str | None = None) -> str:
    """``<kind>:all``, or ``<kind>:index:<index>`` — sets of ``<namespace>/<name>``."""
    return f"{prefix}:all" if index is None else f"{prefix}:index:{index}"
