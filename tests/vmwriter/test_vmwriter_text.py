"""The line format: value text, escaping, sanitising, and which series each piece yields."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from clusterpulse_model import AggregationResults, ClusterOperatorInfo, ClusterStatusRecord, OperatorInfo
from clusterpulse_model.pieces import (
    AggregationsPiece,
    ClusterOperatorsPiece,
    ClusterStatusPiece,
    NodesPiece,
    OperatorsPiece,
)
from clusterpulse_vmwriter import (
    custom_resource_lines,
    escape_label_value,
    float_text,
    format_line,
    node_lines,
    operator_lines,
    sanitize_metric_name,
)
from clusterpulse_vmwriter.render import encode_chunks, epoch_ms, piece_lines, render_batch
from hypothesis import given
from hypothesis import strategies as st

from clusterpulse_core.clock import ZERO_TIME


def test_float_text_spec_examples() -> None:
    examples = [
        (8.0, "8"),
        (15.5, "15.5"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (0.00012, "0.00012"),
        (999999.0, "999999"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (1000000.5, "1.0000005e+06"),
        (6.4e10, "6.4e+10"),
        (123456.7, "123456.7"),
        (0.0, "0"),
        (-0.0, "-0"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (-1234567.0, "-1.234567e+06"),
        (123456789012345.0, "1.23456789012345e+14"),
        (1e16, "1e+16"),
        (-2.5e-07, "-2.5e-07"),
    ]
    assert [(value, float_text(value)) for value, _ in examples] == examples
    assert float_text(math.nan) == "NaN"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_round_trips_in_go_shape(value: float) -> None:
    text = float_text(value)
    assert float(text) == value
    mantissa, _, exponent = text.lstrip("-").partition("e")
    if value != 0:
        decimal_exponent = Decimal(mantissa).adjusted() + int(exponent or 0)
        assert bool(exponent) == (decimal_exponent < -4 or decimal_exponent >= 6), text
    if exponent:
        assert exponent[0] in "+-" and len(exponent) >= 3, text
        assert 1 <= float(mantissa) < 10, text
    assert not mantissa.endswith((".0", ".")), text


def test_label_values_are_escaped() -> None:
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert escape_label_value("plain-value/ok") == "plain-value/ok"
    line = format_line("m", 'we"ird', "n\\1", 1, 5, extra=[("env", "line\nbreak")])
    assert line == 'm{cluster="we\\"ird",node="n\\\\1",env="line\\nbreak"} 1 5'


def test_metric_names_are_sanitised() -> None:
    assert sanitize_metric_name("ok_name:sub") == "ok_name:sub"
    assert sanitize_metric_name("cpu.total-sum/x y") == "cpu_total_sum_x_y"
    assert sanitize_metric_name("9lives") == "_9lives"
    assert sanitize_metric_name("") == "_"
    assert sanitize_metric_name("naïve") == "na_ve"


def test_format_line_value_types() -> None:
    assert format_line("m", "c", "", 10_000_000, 1) == 'm{cluster="c"} 10000000 1'
    assert format_line("m", "c", "", 10_000_000.0, 1) == 'm{cluster="c"} 1e+07 1'
    assert format_line("m", "c", "", True, 1) == 'm{cluster="c"} 1 1'


def test_node_lines_table_order_and_types(pieces: Any) -> None:
    lines = node_lines("prod", pieces.node("w1", ZERO_TIME), 7, extra=[("region", "eu")])
    prefix = '{cluster="prod",node="w1",region="eu"}'
    assert lines == [
        f"clusterpulse_node_cpu_usage_percent{prefix} 11.290322580645162 7",
        f"clusterpulse_node_memory_usage_percent{prefix} 42.5 7",
        f"clusterpulse_node_pods_total{prefix} 12 7",
        f"clusterpulse_node_pods_running{prefix} 10 7",
        f"clusterpulse_node_cpu_capacity{prefix} 16 7",
        f"clusterpulse_node_memory_capacity_bytes{prefix} 68719476736 7",
        f"clusterpulse_node_storage_capacity_bytes{prefix} 107374182400 7",
        f"clusterpulse_node_pods_capacity{prefix} 110 7",
        f"clusterpulse_node_cpu_allocatable{prefix} 15.5 7",
        f"clusterpulse_node_memory_allocatable_bytes{prefix} 66571993088 7",
        f"clusterpulse_node_storage_allocatable_bytes{prefix} 96636764160 7",
        f"clusterpulse_node_pods_allocatable{prefix} 109 7",
        f"clusterpulse_node_cpu_requested{prefix} 1.75 7",
        f"clusterpulse_node_memory_requested_bytes{prefix} 4294967296 7",
        f"clusterpulse_node_pods_pending{prefix} 1 7",
        f"clusterpulse_node_pods_failed{prefix} 0 7",
        f"clusterpulse_node_pods_succeeded{prefix} 1 7",
    ]


def test_operator_lines_write_only_the_collected_kinds() -> None:
    only_olm = operator_lines("c", [OperatorInfo(name="a")], None, 1)
    assert only_olm == [
        'clusterpulse_operator_installed{cluster="c",operator="a"} 1 1',
        'clusterpulse_cluster_operators_total{cluster="c"} 1 1',
    ]
    only_openshift = operator_lines("c", None, [ClusterOperatorInfo(name="dns", available=True)], 1)
    assert only_openshift[-1] == 'clusterpulse_cluster_operators_count{cluster="c"} 1 1'
    assert not any("operators_total" in line for line in only_openshift)
    assert operator_lines("c", [], [], 1) == [
        'clusterpulse_cluster_operators_total{cluster="c"} 0 1',
        'clusterpulse_cluster_operators_count{cluster="c"} 0 1',
    ]


def test_custom_resource_lines_of_every_shape() -> None:
    assert custom_resource_lines("n", "c", "a/b", 3, 1) == [
        'clusterpulse_custom_resource_n{cluster="c",source="a/b"} 3 1'
    ]
    assert custom_resource_lines("flag", "c", "a/b", False, 1) == [
        'clusterpulse_custom_resource_flag{cluster="c",source="a/b"} 0 1'
    ]
    grouped = custom_resource_lines(
        "by-phase", "c", "a/b", {"Running": 2, 'we"ird': 0.5, "x": None}, 1, extra=[("env", "dev")]
    )
    assert grouped == [
        'clusterpulse_custom_resource_by_phase{cluster="c",source="a/b",group="Running",env="dev"} 2 1',
        'clusterpulse_custom_resource_by_phase{cluster="c",source="a/b",group="we\\"ird",env="dev"} 0.5 1',
    ]
    for skipped in (None, "text", [1, 2]):
        assert custom_resource_lines("n", "c", "a/b", skipped, 1) == []


def test_timestamps_come_from_the_pieces(pieces: Any) -> None:
    collected = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    naive = datetime(2024, 5, 6, 7, 8, 9, 123000)
    assert epoch_ms(collected, 0) == 1714979289123
    assert epoch_ms(naive, 0) == 1714979289123
    assert epoch_ms(ZERO_TIME, 42) == 42
    stored = [
        NodesPiece("c", (pieces.node("late", collected), pieces.node("unset", ZERO_TIME))),
        OperatorsPiece("c", (OperatorInfo(name="op"),)),
        AggregationsPiece("c", AggregationResults(source_id="ns/src", computed_at=collected, values={"v": 1})),
        ClusterStatusPiece("c", ClusterStatusRecord(health="healthy")),
    ]
    stream, lines = piece_lines(stored, received_ms=99)
    assert stream == ("aggregations:c:ns/src", "nodes:c", "operators:c")
    stamps = {line.rsplit(" ", 1)[1] for line in lines if 'node="late"' in line or "custom_resource" in line}
    assert stamps == {"1714979289123"}
    assert {line.rsplit(" ", 1)[1] for line in lines if 'node="unset"' in line or "operator" in line} == {"99"}


def test_operators_of_one_store_call_share_one_line_group() -> None:
    _, lines = piece_lines(
        [
            ClusterOperatorsPiece("c", (ClusterOperatorInfo(name="dns"),)),
            OperatorsPiece("c", (OperatorInfo(name="op"),)),
        ],
        received_ms=5,
    )
    assert [line.split("{")[0] for line in lines] == [
        "clusterpulse_operator_installed",
        "clusterpulse_cluster_operator_available",
        "clusterpulse_cluster_operator_progressing",
        "clusterpulse_cluster_operator_degraded",
        "clusterpulse_cluster_operator_upgradeable",
        "clusterpulse_cluster_operators_total",
        "clusterpulse_cluster_operators_count",
    ]


def test_batches_split_at_batch_size(pieces: Any) -> None:
    chunks = encode_chunks([f"m{i} 1 1" for i in range(5)], batch_size=2)
    assert [chunk.body for chunk in chunks] == [b"m0 1 1\nm1 1 1\n", b"m2 1 1\nm3 1 1\n", b"m4 1 1\n"]
    assert [chunk.samples for chunk in chunks] == [2, 2, 1]
    assert render_batch([ClusterStatusPiece("c", ClusterStatusRecord())], 1, 10) is None
    batch = render_batch(pieces.reconcile("c", pieces.at(1), nodes=3), 1, 10)
    assert batch is not None and batch.samples == 3 * 17 + 8 + 2 + 4 + 2
