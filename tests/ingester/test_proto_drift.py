"""The committed stubs are what grpcio-tools generates from proto/ (and the .proto is the spec's listing)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from clusterpulse_ingester import protogen
from clusterpulse_ingester.proto import collector_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
# The spec's listing, copied into the repository beside the vectors (a clone tests itself);
# CLUSTERPULSE_SHARED points at a shared/ folder instead, as for the vectors.
SPEC_LISTING = (
    Path(os.environ["CLUSTERPULSE_SHARED"]) / "spec" / "collector.proto.md"
    if os.environ.get("CLUSTERPULSE_SHARED")
    else ROOT / "tests" / "vectors" / "collector.proto.md"
)


def test_stubs_match_the_proto() -> None:
    generated = protogen.generate(ROOT / "proto")
    assert set(generated) == set(protogen.GENERATED)
    for name, text in generated.items():
        committed = (protogen.PACKAGE_DIR / name).read_text()
        assert protogen.comparable(committed) == protogen.comparable(text), (
            f"{name} drifted from proto/{protogen.PROTO_FILE}: run python -m clusterpulse_ingester.protogen"
        )


def test_proto_is_the_spec_listing() -> None:
    spec = SPEC_LISTING.read_text()
    listing = re.search(r"## 3\. Complete interface listing\n\n```proto\n(.*?)```", spec, re.S)
    assert listing is not None
    text = (ROOT / "proto" / protogen.PROTO_FILE).read_text()
    # Upstream fields unchanged, additions only: without the marked extension blocks, byte for byte.
    assert protogen.upstream_part(text) == listing.group(1)
    assert len(protogen.extension_blocks(text)) == 2  # the field in MetricsBatch, the messages at the end


def test_the_extension_uses_its_own_numbers_and_names() -> None:
    """The one field added to an upstream message is in the extension range, not reserved, not upstream's."""
    upstream = {
        name for name in pb.DESCRIPTOR.message_types_by_name if not name.startswith(("ClusterPulse", "Extension"))
    }
    added = [f for f in pb.MetricsBatch.DESCRIPTOR.fields if f.number not in range(1, 100)]
    assert [(f.name, f.number) for f in added] == [("clusterpulse", 1000)]
    assert all(f.number in protogen.EXTENSION_NUMBERS for f in added)
    for name in upstream - {"MetricsBatch"}:  # no extension field inside any other upstream message
        assert all(f.number < 100 for f in pb.DESCRIPTOR.message_types_by_name[name].fields), name
    reserved = re.findall(r"reserved ([^;]*);", SPEC_LISTING.read_text())
    assert not any("1000" in r or "clusterpulse" in r for r in reserved)


def test_descriptor_names_are_upstream() -> None:
    assert pb.DESCRIPTOR.name == "clusterpulse/collector/v1/collector.proto"
    assert pb.DESCRIPTOR.package == "clusterpulse.collector.v1"
    service = pb.DESCRIPTOR.services_by_name["CollectorService"]
    assert service.methods_by_name["Connect"].full_name == "clusterpulse.collector.v1.CollectorService.Connect"
    assert pb.MetricsBatch.DESCRIPTOR.fields_by_name["cluster_info"].number == 9
    assert pb.ClusterMetrics.DESCRIPTOR.fields_by_name["deployments"].number == 22
