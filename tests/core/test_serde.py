"""The one converter: wire names, never-null collections, RFC 3339 times."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from clusterpulse_model import (
    AggregationResults,
    ClusterSpecRecord,
    CollectedResource,
    CredentialsRef,
    NodeMetrics,
    RegistryStatusRecord,
)

from clusterpulse_core import serde

T = datetime(2025, 1, 1, 12, 0, 0, 123450, tzinfo=UTC)


def test_snake_case_with_seconds_times_and_empty_collections() -> None:
    data = serde.unstructure(NodeMetrics(name="n1", timestamp=T))
    assert data["timestamp"] == "2025-01-01T12:00:00Z"
    assert data["roles"] == [] or data["roles"] == ()
    assert data["labels"] == {}
    assert serde.loads(serde.dumps(NodeMetrics(name="n1")))["conditions"] == []


def test_camel_case_record() -> None:
    spec = ClusterSpecRecord(display_name="Prod", endpoint="https://x", credentials_ref=CredentialsRef("s", "ns"))
    assert serde.loads(serde.dumps(spec)) == {
        "displayName": "Prod",
        "endpoint": "https://x",
        "credentialsRef": {"name": "s", "namespace": "ns"},
        "labels": {},
        "monitoring": {"interval": 0, "timeout": 0},
    }


def test_nano_times_renames_and_omit_empty() -> None:
    results = AggregationResults(source_id="ns/a", computed_at=T, values={"n": 1})
    assert serde.unstructure(results)["computedAt"] == "2025-01-01T12:00:00.12345Z"
    resource = serde.unstructure(CollectedResource(id="x", name="x", values={"v": None}))
    assert resource == {"_id": "x", "_name": "x", "values": {"v": None}}
    full = serde.unstructure(CollectedResource(id="ns/x", name="x", namespace="ns", labels={"a": "b"}))
    assert full["_namespace"] == "ns" and full["_labels"] == {"a": "b"}


def test_optional_field_omitted_when_empty() -> None:
    assert "error" not in serde.unstructure(RegistryStatusRecord(available=True))
    assert serde.unstructure(RegistryStatusRecord(error="boom"))["error"] == "boom"


def test_structure_reads_null_collections_as_empty() -> None:
    node = serde.structure(
        {"name": "n", "roles": None, "labels": None, "timestamp": "2025-01-01T00:00:00Z"}, NodeMetrics
    )
    assert node.roles == () and node.labels == {}
    assert node.timestamp == datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("2025-01-01T00:00:00Z", datetime(2025, 1, 1, tzinfo=UTC)),
        ("2025-01-01T02:00:00+02:00", datetime(2025, 1, 1, tzinfo=UTC)),
        ("2025-01-01T00:00:00.123456789Z", datetime(2025, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_parse_time_accepts_rfc3339(text: str, expected: datetime) -> None:
    assert serde.parse_time(text) == expected


def test_parse_time_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        serde.parse_time("yesterday")


def test_round_trip_of_frozen_classes() -> None:
    node = NodeMetrics(name="n", roles=("a", "b"), labels={"x": "y"}, timestamp=T.replace(microsecond=0))
    assert serde.structure(serde.loads(serde.dumps(node)), NodeMetrics) == node
    assert attrs.has(NodeMetrics)
