"""The expression language against the reference vectors (docs/compatibility.md#metricsource-language)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from clusterpulse_metricsource.errors import ExpressionError
from clusterpulse_metricsource.expr import (
    Binary,
    Call,
    Identifier,
    Literal,
    Node,
    Unary,
    builtin_function_table,
    coerce_result,
    compile_expression,
    parse,
    to_bool,
    to_float,
    to_string,
    tokenize,
)
from clusterpulse_metricsource.expr.nodes import references
from clusterpulse_testing.vectors import decode_value, same_value, vector_test

FUNCTIONS = builtin_function_table()
HELPERS = {"toBool": to_bool, "toFloat": to_float, "toString": to_string}


def vector_form(node: Node) -> dict[str, Any]:
    """A tree in the vectors' AST notation (``{"lit": v}``, ``{"op": "+", "l": ..., "r": ...}``...)."""
    if isinstance(node, Literal):
        return {"lit": node.value}
    if isinstance(node, Identifier):
        return {"id": node.name}
    if isinstance(node, Unary):
        return {"unary": node.op, "x": vector_form(node.operand)}
    if isinstance(node, Binary):
        return {"op": node.op, "l": vector_form(node.left), "r": vector_form(node.right)}
    assert isinstance(node, Call)
    return {"call": node.name, "args": [vector_form(arg) for arg in node.args]}


@vector_test("metricsource", "tokenize")
def test_tokenize(case: dict[str, Any]) -> None:
    if case.get("expect_error"):
        with pytest.raises(ExpressionError):
            tokenize(case["input"])
        return
    tokens = [[token.type.name, token.literal] for token in tokenize(case["input"])]
    assert tokens == case["tokens"]


@vector_test("metricsource", "parse")
def test_parse(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if "ast" not in expect:
        with pytest.raises(ExpressionError) as caught:
            parse(case["expression"])
        if "error" in expect:
            assert caught.value.message == expect["error"]
        return
    tree = parse(case["expression"])
    assert same_value(vector_form(tree), expect["ast"])
    assert sorted(references(tree)) == expect["references"]


@vector_test("metricsource", "eval")
def test_eval(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if "compile_error" in expect or "compile_error_contains" in expect:
        with pytest.raises(ExpressionError) as caught:
            compile_expression(case["expression"], FUNCTIONS)
        if "compile_error" in expect:
            assert caught.value.message == expect["compile_error"]
        else:
            assert expect["compile_error_contains"].lower() in caught.value.message.lower()
        return
    compiled = compile_expression(case["expression"], FUNCTIONS)
    variables = decode_value(case["variables"])
    if "error" in expect:
        with pytest.raises(ExpressionError) as caught:
            compiled.evaluate(variables)
        assert caught.value.message == expect["error"]
        return
    result = coerce_result(compiled.evaluate(variables), case["result_type"])
    assert same_value(result, expect["value"]), f"got {result!r}"


@vector_test("metricsource", "function")
def test_function(case: dict[str, Any]) -> None:
    impl = FUNCTIONS[case["function"]].impl
    result = impl(*decode_value(case["args"]))
    expect = case["expect"]
    if "regex" in expect:
        assert isinstance(result, str) and re.search(expect["regex"], result), result
    elif "value_min" in expect:
        assert isinstance(result, float) and result >= expect["value_min"], result
    else:
        assert same_value(result, expect["value"]), f"got {result!r}"


@vector_test("metricsource", "helper")
def test_helper(case: dict[str, Any]) -> None:
    result = HELPERS[case["helper"]](decode_value(case["value"]))
    assert same_value(result, case["expect"]), f"got {result!r}"


@vector_test("metricsource", "coerce")
def test_coerce(case: dict[str, Any]) -> None:
    result = coerce_result(decode_value(case["value"]), case["result_type"])
    assert same_value(result, case["expect"]), f"got {result!r}"
