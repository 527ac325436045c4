"""A readable fleet summary read back from Redis, the way the ClusterPulse API reads it.

The client must be created with ``decode_responses=True``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import msgspec
import redis

GIB = 1024**3


@attrs.frozen
class ClusterRow:
    """One line of the fleet summary."""

    name: str
    health: str
    message: str
    nodes_ready: int
    nodes: int
    cpu_requested: float
    cpu_capacity: float
    memory_requested: int
    memory_capacity: int
    pods_running: int
    pods: int
    operators: int
    cluster_operators: int
    cluster_operators_available: int


def _members(client: redis.Redis, key: str) -> list[str]:
    return [str(member) for member in client.smembers(key)]


def _json(client: redis.Redis, key: str) -> Any:
    raw = client.get(key)
    return msgspec.json.decode(raw) if raw else None


def read_fleet(client: redis.Redis) -> list[ClusterRow]:
    """One row per cluster in ``clusters:all``, from its status, metrics, nodes and operators."""
    rows = []
    for name in sorted(_members(client, "clusters:all")):
        status = _json(client, f"cluster:{name}:status") or {}
        metrics = _json(client, f"cluster:{name}:metrics") or {}
        cpu_requested, memory_requested = 0.0, 0
        for node_name in _members(client, f"cluster:{name}:nodes"):
            current = client.hget(f"cluster:{name}:node:{node_name}", "current")
            if current:
                node = msgspec.json.decode(current)
                cpu_requested += node.get("cpu_requested", 0.0)
                memory_requested += node.get("memory_requested", 0)
        operators = _json(client, f"cluster:{name}:operators") or []
        cluster_operators = _json(client, f"cluster:{name}:cluster_operators") or []
        rows.append(
            ClusterRow(
                name=name,
                health=status.get("health", "unknown"),
                message=status.get("message", ""),
                nodes_ready=metrics.get("nodes_ready", 0),
                nodes=metrics.get("nodes", 0),
                cpu_requested=cpu_requested,
                cpu_capacity=metrics.get("cpu_capacity", 0.0),
                memory_requested=memory_requested,
                memory_capacity=metrics.get("memory_capacity", 0),
                pods_running=metrics.get("pods_running", 0),
                pods=metrics.get("pods", 0),
                operators=len(operators),
                cluster_operators=len(cluster_operators),
                cluster_operators_available=sum(1 for op in cluster_operators if op.get("available")),
            )
        )
    return rows


def format_fleet(rows: list[ClusterRow]) -> str:
    """The summary table, then each cluster's health reason (``Cluster is healthy``, ``Issues: ...``)."""
    header = ("CLUSTER", "HEALTH", "NODES", "CPU req/cap", "MEMORY req/cap", "PODS", "OPERATORS")
    lines = [header]
    for row in rows:
        operators = f"{row.operators} OLM"
        if row.cluster_operators:
            operators += f", {row.cluster_operators_available}/{row.cluster_operators} ClusterOperators available"
        lines.append(
            (
                row.name,
                row.health,
                f"{row.nodes_ready}/{row.nodes} ready",
                f"{row.cpu_requested:.2f}/{row.cpu_capacity:.1f} cores",
                f"{row.memory_requested / GIB:.1f}/{row.memory_capacity / GIB:.1f} GiB",
                f"{row.pods_running}/{row.pods} running",
                operators,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in lines]
    text += [f"  {row.name}: {row.message or '(no health message stored)'}" for row in rows]
    return "\n".join(text)


@attrs.frozen
class RegistryRow:
    """One registry, as ``/registries/status`` reads it."""

    name: str
    available: bool
    response_time: int
    repositories: int
    error: str


def read_registries(client: redis.Redis) -> list[RegistryRow]:
    """One row per registry in ``registries:all``, from its status."""
    rows = []
    for name in sorted(_members(client, "registries:all")):
        status = _json(client, f"registry:{name}:status") or {}
        rows.append(
            RegistryRow(
                name,
                bool(status.get("available")),
                int(status.get("response_time") or 0),
                int(status.get("repository_count") or 0),
                str(status.get("error") or ""),
            )
        )
    return rows


def format_registries(rows: list[RegistryRow]) -> str:
    """One line per registry (empty when there are none)."""
    lines = [
        f"Registry {row.name}: "
        + ("available" if row.available else "unavailable")
        + f", {row.response_time} ms, {row.repositories} repositories"
        + (f" ({row.error})" if row.error else "")
        for row in rows
    ]
    return "\n".join(lines)


@attrs.frozen
class AlertRow:
    """One firing alert, from an ``alerts:<c>:<id>`` hash (docs/compatibility.md#r4), as the API lists it."""

    cluster: str
    severity: str
    name: str
    resource: str
    message: str


_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


def read_alerts(client: redis.Redis) -> list[AlertRow]:
    """Every ``alerts:<c>:<id>`` hash of the clusters in ``clusters:all``, most severe first."""
    rows = []
    for name in sorted(_members(client, "clusters:all")):
        for key in client.scan_iter(match=f"alerts:{name}:*", count=1000):
            fields: dict[str, str] = client.hgetall(key)  # type: ignore[assignment]
            if not fields:
                continue
            resource = fields.get("resource_name", "")
            if fields.get("namespace"):
                resource = f"{fields['namespace']}/{resource}"
            rows.append(
                AlertRow(
                    name,
                    fields.get("severity", ""),
                    fields.get("name", ""),
                    f"{fields.get('resource_type', '')}/{resource}",
                    fields.get("message", ""),
                )
            )
    return sorted(rows, key=lambda r: (_SEVERITY_ORDER.get(r.severity, 9), r.cluster, r.name, r.resource))


def format_alerts(rows: list[AlertRow]) -> str:
    """One line per firing alert."""
    if not rows:
        return "Alerts: none firing"
    width = max(len(row.cluster) for row in rows)
    lines = [f"Alerts ({len(rows)} firing):"]
    for row in rows:
        lines.append(f"  {row.severity:<8}  {row.cluster:<{width}}  {row.name} {row.resource}: {row.message}")
    return "\n".join(lines)


@attrs.frozen
class SourceRow:
    """One MetricSource's aggregation results on one cluster."""

    source: str
    cluster: str
    resources: int
    truncated: bool
    values: dict[str, Any]


def read_sources(client: redis.Redis) -> list[SourceRow]:
    """Aggregations of every enabled MetricSource on every cluster that has its data."""
    rows = []
    for source in sorted(_members(client, "metricsources:enabled")):
        for cluster in sorted(_members(client, "clusters:all")):
            collection = _json(client, f"cluster:{cluster}:custom:{source}:resources")
            if collection is None:
                continue
            aggregations = _json(client, f"cluster:{cluster}:custom:{source}:aggregations") or {}
            rows.append(
                SourceRow(
                    source,
                    cluster,
                    collection.get("resourceCount", 0),
                    bool(collection.get("truncated")),
                    aggregations.get("values") or {},
                )
            )
    return rows


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value_text(v)}" for k, v in sorted(value.items())) + "}"
    return str(value)


def format_sources(rows: list[SourceRow]) -> str:
    """One block per MetricSource: resources collected and aggregation values per cluster."""
    if not rows:
        return "MetricSources: none collected yet"
    lines = []
    for source in sorted({row.source for row in rows}):
        lines.append(f"MetricSource {source}:")
        for row in (r for r in rows if r.source == source):
            values = ", ".join(f"{name}={_value_text(value)}" for name, value in sorted(row.values.items()))
            more = " (truncated)" if row.truncated else ""
            lines.append(f"  {row.cluster}: {row.resources} resources{more}; {values}")
    return "\n".join(lines)


def key_patterns(client: redis.Redis) -> list[tuple[str, int]]:
    """Every key written, with cluster, node and source names folded into ``<...>`` patterns."""
    counts: Counter[str] = Counter()
    clusters = set(_members(client, "clusters:all"))
    registries = set(_members(client, "registries:all"))
    for raw in client.scan_iter(count=1000):
        parts = str(raw).split(":")
        if len(parts) > 1 and parts[0] in ("cluster", "events", "alerts") and parts[1] in clusters:
            parts[1] = "<cluster>"
        elif len(parts) > 1 and parts[0] in ("registry", "events") and parts[1] in registries:
            parts[1] = "<registry>"
        if len(parts) > 2 and parts[0] == "alerts":
            parts[2] = "<id>"
        if len(parts) > 3 and parts[0] == "cluster" and parts[2] == "node":
            parts[3] = "<node>"
        if len(parts) > 3 and parts[2] in ("cluster_operator", "custom"):
            parts[3] = "<name>"
        counts[":".join(parts)] += 1
    return sorted(counts.items())
