"""A plain tree-walking interpreter: the reference the compiled evaluator is tested against.

It reads like the specification (docs/compatibility.md#metricsource-language with docs/compatibility.md#m1–#m3) and
is slow on
purpose: it dispatches on the node type at every step. Production code uses
:mod:`.compiler`. Function names and arities are assumed checked (see ``check_functions``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from clusterpulse_metricsource.errors import ExpressionError
from clusterpulse_metricsource.expr.nodes import Binary, Call, Identifier, Literal, Node, Unary
from clusterpulse_metricsource.expr.values import (
    finite_or_none,
    to_bool,
    to_float,
    to_string,
    values_equal,
    values_ordered,
)


def interpret(node: Node, values: Mapping[str, Any] | None, functions: Mapping[str, Callable[..., Any]]) -> Any:
    """The value of ``node`` in the context ``values`` (None: no context), before coercion.

    ``functions`` maps names to the Python implementations. A non-finite float result
    becomes None (M3).
    """
    return finite_or_none(_evaluate(node, values or {}, functions))


def _evaluate(node: Node, values: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]]) -> Any:
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Identifier):
        return values.get(node.name)
    if isinstance(node, Unary):
        operand = _evaluate(node.operand, values, functions)
        if node.op == "!":
            return not to_bool(operand)
        return finite_or_none(-to_float(operand))
    if isinstance(node, Binary):
        return _binary(node, values, functions)
    if isinstance(node, Call):
        function = functions.get(node.name)
        if function is None:
            raise ExpressionError(f"unknown function: {node.name}", node.position)
        args = [_evaluate(arg, values, functions) for arg in node.args]
        return finite_or_none(function(*args))
    raise TypeError(f"not an expression node: {node!r}")


def _binary(node: Binary, values: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]]) -> Any:
    op = node.op
    left = _evaluate(node.left, values, functions)
    if op == "&&":
        return to_bool(left) and to_bool(_evaluate(node.right, values, functions))
    if op == "||":
        return to_bool(left) or to_bool(_evaluate(node.right, values, functions))
    if op == "??":
        return left if left is not None else _evaluate(node.right, values, functions)
    right = _evaluate(node.right, values, functions)
    if op == "==":
        return values_equal(left, right)
    if op == "!=":
        return not values_equal(left, right)
    if op in ("<", "<=", ">", ">="):
        return values_ordered(op, left, right)
    if op == "+" and (isinstance(left, str) or isinstance(right, str)):
        return to_string(left) + to_string(right)
    a, b = to_float(left), to_float(right)
    if op == "+":
        return finite_or_none(a + b)
    if op == "-":
        return finite_or_none(a - b)
    if op == "*":
        return finite_or_none(a * b)
    if op == "/":
        return None if b == 0 else finite_or_none(a / b)
    if op == "%":
        if b == 0 or not math.isfinite(a) or b != b:
            return None
        return finite_or_none(math.fmod(a, b))
    raise ExpressionError(f"unknown binary operator: {op}", node.position)
