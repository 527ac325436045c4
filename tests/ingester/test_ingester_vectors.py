"""The push-mode vector groups of utils_public.json: backoff, buffer, OLM on the agent, info map, float64."""

from __future__ import annotations

from typing import Any

from clusterpulse_cluster.olm import operator_info
from clusterpulse_ingester.agent.backoff import Backoff
from clusterpulse_ingester.agent.buffer import BatchBuffer
from clusterpulse_ingester.convert import cluster_info_map, operator_proto, to_float64
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_testing.vectors import floats_equal, vector_test
from google.protobuf.json_format import MessageToDict


@vector_test("utils", "collector_backoff")
def test_backoff(case: dict[str, Any]) -> None:
    # Each call is checked at both ends of the jitter range, so the bounds hold for any draw.
    for draw in (0.0, 0.5, 0.999999):
        backoff = Backoff(attempts=case["initial_attempts"], rand=lambda d=draw: d)  # type: ignore[misc]
        sequence = case.get("sequence") or ["backoff"] * case["calls"]
        got = []
        for op in sequence:
            if op == "reset":
                backoff.reset()
            else:
                got.append(backoff.next())
        assert len(got) == len(case["out_seconds"])
        for seconds, bounds in zip(got, case["out_seconds"], strict=True):
            assert bounds["min"] <= seconds <= bounds["max"], (draw, got)


def test_backoff_has_jitter() -> None:
    delays = {round(Backoff(attempts=3).next(), 6) for _ in range(20)}
    assert len(delays) > 1


@vector_test("utils", "collector_buffer")
def test_buffer(case: dict[str, Any]) -> None:
    buffer: BatchBuffer[str] = BatchBuffer(case["capacity"])
    if "effective_capacity" in case:
        assert buffer.capacity == case["effective_capacity"]
    for op, *args in case["ops"]:
        if op == "push":
            buffer.push(args[0])
        elif op == "pop":
            assert buffer.pop() == args[0]
        else:
            assert len(buffer) == args[0]
    assert len(buffer) == case["len"]


def test_buffer_counts_drops_and_keeps_order_on_put_back() -> None:
    buffer: BatchBuffer[int] = BatchBuffer(2)
    for item in (1, 2, 3):
        buffer.push(item)
    assert buffer.dropped == 1
    first = buffer.pop()
    assert buffer.push_front(first)  # type: ignore[arg-type]
    assert [buffer.pop(), buffer.pop(), buffer.pop()] == [2, 3, None]


@vector_test("utils", "olm_operator_extraction_agent")
def test_olm_operator_on_the_agent(case: dict[str, Any]) -> None:
    info = operator_info(case["csv"], case["subscription"], agent=True)
    if case["out"] is None:  # an operator the agent skips (e.g. a CSV without a spec)
        assert info is None
        return
    assert info is not None
    sent = MessageToDict(
        operator_proto(info), preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    for key, want in case["out"].items():
        if key == "note":
            continue
        assert sent[key] == want, key


@vector_test("utils", "ingester_cluster_info_map")
def test_cluster_info_map(case: dict[str, Any]) -> None:
    assert cluster_info_map(pb.ClusterInfo(**case["in"])) == case["out"]


@vector_test("utils", "agent_to_float64")
def test_agent_to_float64(case: dict[str, Any]) -> None:
    value, ok = to_float64(case["in"])
    assert ok is case["ok"]
    assert floats_equal(value, float(case["out"]))
