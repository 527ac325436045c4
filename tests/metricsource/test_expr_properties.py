"""Properties of the expression language, checked on random inputs (hypothesis).

* any string either compiles or fails with a MetricSourceError, and a compiled expression
  evaluates (and coerces) any context without raising;
* the compiled evaluator and the reference interpreter agree on random trees and contexts;
* printing a random tree and parsing it back gives the same tree.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import pytest
from clusterpulse_metricsource.errors import ExpressionError, MetricSourceError
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
    compile_tree,
    interpret,
    parse,
)
from clusterpulse_metricsource.expr.nodes import BINARY_LEVELS
from clusterpulse_metricsource.expr.values import to_string
from clusterpulse_metricsource.functions.numeric import round_half_away_from_zero
from hypothesis import example, given, settings
from hypothesis import strategies as st

FUNCTIONS = builtin_function_table()
IMPLS = {name: contribution.impl for name, contribution in FUNCTIONS.items()}
# now() and age() read the clock, so two evaluations may differ.
DETERMINISTIC = sorted(name for name in FUNCTIONS if name not in ("now", "age"))
NAMES = ["a", "b", "x", "_y", "Zz9"]
RESULT_TYPES = ["", "string", "integer", "float", "boolean", "quantity"]
PROPERTY = settings(max_examples=300, deadline=None)

FRAGMENTS = [
    *NAMES,
    *FUNCTIONS,
    "if",
    "1",
    "0",
    "2.5",
    "1e3",
    "1.2.3",
    "5.",
    "'s'",
    '"t"',
    "'it\\'s'",
    "'open",
    "(",
    ")",
    ",",
    *BINARY_LEVELS,
    "!",
    "=",
    "&",
    "|",
    "?",
    ".",
    "@",
    "#",
    " ",
    "\t",
    "true",
    "NULL",
    "nil",
    "é",
    "õ",
    "\\",
    "\x00",
    "'10'",
    "-",
    "1e",
    "e3",
]

numeric_strings = st.sampled_from(["1", "-2.5", "1e3", "inf", "-Infinity", "nan", "0x1p3", "1_000", " 1", "", "1e400"])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    numeric_strings,
)
context_values = st.one_of(
    scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=3), scalars, max_size=2)
)
numbers = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 1024.0]),
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6),
)
full_contexts = st.fixed_dictionaries({name: st.one_of(numbers, numbers, context_values) for name in NAMES})
contexts = st.one_of(full_contexts, full_contexts, st.none(), st.dictionaries(st.sampled_from(NAMES), context_values))


def same_result(got: Any, want: Any) -> bool:
    """Equal with the same type, NaN equal to NaN, and the same sign of zero."""
    if type(got) is not type(want):
        return False
    if isinstance(want, float):
        if math.isnan(want):
            return math.isnan(got)
        return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)
    return bool(got == want)


@st.composite
def calls(draw: st.DrawFn, children: st.SearchStrategy[Node]) -> Node:
    name = draw(st.sampled_from(DETERMINISTIC))
    meta = FUNCTIONS[name].meta
    low = meta["min_args"]
    high = meta["max_args"] if meta["max_args"] is not None else low + 3
    args = draw(st.lists(children, min_size=low, max_size=high))
    return Call(name, tuple(args))


literals = st.builds(
    Literal,
    st.one_of(
        st.none(),
        st.booleans(),
        st.floats(allow_nan=False, allow_infinity=False, min_value=0.0),
        st.text(max_size=6),
        numeric_strings,
        st.sampled_from(["s", "ab", "1.0", "2"]),
    ),
)
trees = st.recursive(
    st.one_of(st.builds(Identifier, st.sampled_from(NAMES)), literals),
    lambda children: st.one_of(
        st.builds(Binary, st.sampled_from(sorted(BINARY_LEVELS)), children, children),
        st.builds(Unary, st.sampled_from(["-", "!"]), children),
        calls(children),
        st.builds(Binary, st.sampled_from(sorted(BINARY_LEVELS)), children, children),
    ),
    max_leaves=16,
)


@PROPERTY
@given(
    text=st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join),
    values=contexts,
    result_type=st.sampled_from(RESULT_TYPES),
)
def test_any_fragment_string_compiles_or_fails_cleanly(text: str, values: Any, result_type: str) -> None:
    try:
        compiled = compile_expression(text, FUNCTIONS)
    except MetricSourceError:
        return
    coerce_result(compiled.evaluate(values), result_type)


@PROPERTY
@given(text=st.text(max_size=20))
def test_any_text_compiles_or_fails_cleanly(text: str) -> None:
    try:
        compiled = compile_expression(text, FUNCTIONS)
    except MetricSourceError:
        return
    compiled.evaluate({})


@settings(max_examples=500, deadline=None)
@given(tree=trees, many_values=st.lists(contexts, min_size=1, max_size=4), result_type=st.sampled_from(RESULT_TYPES))
def test_compiled_evaluation_agrees_with_the_interpreter(tree: Node, many_values: list[Any], result_type: str) -> None:
    compiled = compile_tree(tree, FUNCTIONS)
    for values in many_values:
        got = compiled.evaluate(values)
        want = interpret(tree, values, IMPLS)
        assert same_result(got, want), f"{compiled.code}\ncompiled {got!r} != interpreted {want!r}"
        assert same_result(coerce_result(got, result_type), coerce_result(want, result_type))


def source_text(node: Node) -> str:
    """Fully parenthesised source of a tree whose literals are all writable."""
    if isinstance(node, Literal):
        value = node.value
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return repr(value)
        assert isinstance(value, str)
        escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\t", "\\t")
        return f"'{escaped}'"
    if isinstance(node, Identifier):
        return node.name
    if isinstance(node, Unary):
        return f"({node.op}{source_text(node.operand)})"
    if isinstance(node, Binary):
        return f"({source_text(node.left)} {node.op} {source_text(node.right)})"
    assert isinstance(node, Call)
    return f"{node.name}({', '.join(source_text(arg) for arg in node.args)})"


@PROPERTY
@given(tree=trees)
def test_printed_tree_parses_back_to_itself(tree: Node) -> None:
    text = source_text(tree)
    assert parse(text) == tree, text
    assert compile_expression(text, FUNCTIONS).references == compile_tree(tree, FUNCTIONS).references


INTERESTING = [
    None,
    True,
    False,
    0,
    1,
    -1,
    3,
    2**53 + 1,
    0.0,
    -0.0,
    1.0,
    2.5,
    -7.5,
    1e308,
    math.nan,
    math.inf,
    -math.inf,
    "",
    "a",
    "10",
    "1e3",
    " 1",
    "nan",
    [1],
    {"k": 1},
]


@pytest.mark.parametrize("op", sorted(BINARY_LEVELS))
def test_every_operator_agrees_on_every_pair_of_interesting_values(op: str) -> None:
    variables = compile_tree(Binary(op, Identifier("a"), Identifier("b")), FUNCTIONS)
    for left in INTERESTING:
        for right in INTERESTING:
            trees = [
                Binary(op, Identifier("a"), Identifier("b")),
                Binary(op, Literal(left), Literal(right)),
                Binary(op, Literal(left), Identifier("b")),
                Binary(op, Identifier("a"), Literal(right)),
            ]
            values = {"a": left, "b": right}
            want = interpret(trees[0], values, IMPLS)
            assert same_result(variables.evaluate(values), want), (left, op, right)
            for tree in trees[1:]:
                assert same_result(compile_tree(tree, FUNCTIONS).evaluate(values), want), (tree, want)


@pytest.mark.parametrize("op", ["-", "!"])
def test_every_unary_operator_agrees_on_interesting_values(op: str) -> None:
    for value in INTERESTING:
        want = interpret(Unary(op, Identifier("a")), {"a": value}, IMPLS)
        assert same_result(compile_tree(Unary(op, Identifier("a")), FUNCTIONS).evaluate({"a": value}), want)
        assert same_result(compile_tree(Unary(op, Literal(value)), FUNCTIONS).evaluate(None), want)


@PROPERTY
@given(value=st.floats(allow_nan=False, allow_infinity=False))
@example(0.5)
@example(1.5)
@example(-1.5)
@example(-2.5)
@example(0.49999999999999994)
@example(-0.4)
@example(4503599627370495.5)
def test_round_half_away_from_zero_matches_decimal_rounding(value: float) -> None:
    with localcontext(prec=400):
        want = float(Decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    got = round_half_away_from_zero(value)
    assert got == want and math.copysign(1.0, got) == math.copysign(1.0, value)


@PROPERTY
@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_reads_back_as_the_same_float(value: float) -> None:
    text = to_string(value)
    assert float(text) == value
    mantissa, _, exponent = text.partition("e")
    if exponent:
        assert exponent[0] in "+-" and len(exponent) >= 3
        assert abs(value) < 1e-4 or abs(value) >= 1e6
    elif value != int(value):
        assert 1e-4 <= abs(value) < 1e21
    assert not mantissa.endswith(".") and not mantissa.endswith(".0")


@pytest.mark.parametrize(
    "text",
    [
        "(" * 500 + "1" + ")" * 500,
        "-" * 500 + "1",
        "!" * 2000 + "a",
        "+".join(["a"] * 500),
        "f(" * 300 + ")" * 300,
        "round(" * 200 + "1" + ")" * 200,
    ],
)
def test_pathologically_deep_expressions_fail_cleanly(text: str) -> None:
    with pytest.raises(ExpressionError, match="nested more than"):
        compile_expression(text, FUNCTIONS)


def test_deep_trees_built_without_the_parser_fail_cleanly() -> None:
    tree: Node = Literal(1.0)
    for _ in range(500):
        tree = Binary("+", tree, Identifier("a"))
    with pytest.raises(ExpressionError, match="nested more than"):
        compile_tree(tree, FUNCTIONS)
