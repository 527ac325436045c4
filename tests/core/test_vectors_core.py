"""Data-driven tests over the core's groups of utils_public.json."""

from __future__ import annotations

from typing import Any

import pytest
from clusterpulse_testing.vectors import same_value, vector_test

from clusterpulse_core.breaker import CircuitBreaker, CircuitOpenError
from clusterpulse_core.envvars import parse_bool, parse_int
from clusterpulse_core.quantity import parse_cpu, parse_memory


@vector_test("utils", "parse_cpu")
def test_parse_cpu(case: dict[str, Any]) -> None:
    assert same_value(parse_cpu(case["in"]), case["out"]), case


@vector_test("utils", "parse_memory")
def test_parse_memory(case: dict[str, Any]) -> None:
    assert same_value(parse_memory(case["in"]), case["out"]), case


@vector_test("utils", "env_bool")
def test_env_bool(case: dict[str, Any]) -> None:
    assert parse_bool(case["value"], case["default"]) is case["out"]


@vector_test("utils", "env_int_with_min")
def test_env_int_with_min(case: dict[str, Any]) -> None:
    assert parse_int(case["value"], case["default"], case["min"]) == case["out"]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Boom(Exception):
    pass


@vector_test("utils", "circuit_breaker")
def test_circuit_breaker(case: dict[str, Any]) -> None:
    clock = _Clock()
    breaker = CircuitBreaker(case["threshold"], case["recovery_timeout_s"], clock=clock)
    for step in case["steps"]:
        clock.now = step["t"]
        called = []

        def fn(kind: str = step["fn"], called: list[bool] = called) -> str:
            called.append(True)
            if kind == "fail":
                raise _Boom("fn failed")
            return "ok"

        if step["expect"] == "ok":
            assert breaker.call(fn) == "ok"
        elif step["expect"] == "fn_error":
            with pytest.raises(_Boom):
                breaker.call(fn)
        else:
            with pytest.raises(CircuitOpenError, match="circuit breaker is open"):
                breaker.call(fn)
            assert not called
        assert breaker.state.value == step["state_after"], (case["name"], step)
        assert breaker.failure_count == step["failure_count_after"], (case["name"], step)
