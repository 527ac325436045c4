"""MetricSource collection results (docs/compatibility.md#metricsource-wire, docs/compatibility.md#redis-keys);
camelCase on the wire."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.clock import ZERO_TIME
from clusterpulse_core.serde import wire


@wire(
    case="camel",
    time="nano",
    rename={"id": "_id", "name": "_name", "namespace": "_namespace", "labels": "_labels"},
    omit_empty=("namespace", "labels"),
)
@attrs.frozen
class CollectedResource:
    """One extracted resource: identity plus field values (``None`` for no value)."""

    id: str
    name: str
    namespace: str = ""
    labels: dict[str, str] = attrs.field(factory=dict)
    values: dict[str, Any] = attrs.field(factory=dict)


@wire(case="camel", time="nano")
@attrs.frozen
class CustomResourceCollection:
    """What one MetricSource collected from one cluster."""

    source_id: str
    cluster_name: str
    collected_at: datetime = ZERO_TIME
    resource_count: int = 0
    truncated: bool = False
    duration_ms: int = 0
    resources: tuple[CollectedResource, ...] = ()


@wire(case="camel", time="nano")
@attrs.frozen
class AggregationResults:
    """Aggregation values computed over one cluster's collection."""

    source_id: str
    computed_at: datetime = ZERO_TIME
    duration_ms: int = 0
    values: dict[str, Any] = attrs.field(factory=dict)
