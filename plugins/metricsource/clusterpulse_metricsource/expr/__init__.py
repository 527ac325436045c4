"""The MetricSource expression language (computed fields, docs/compatibility.md#metricsource-language).

``compile_expression(text, functions)`` parses and checks an expression once;
``CompiledExpression.evaluate(values)`` runs it against one resource's values;
``coerce_result(value, result_type)`` applies the computed field's type.
"""

from __future__ import annotations

from typing import Any

from clusterpulse_metricsource.expr.compiler import (
    CompiledExpression,
    compile_expression,
    compile_tree,
    function_impls,
)
from clusterpulse_metricsource.expr.interpreter import interpret
from clusterpulse_metricsource.expr.nodes import Binary, Call, Identifier, Literal, Node, Unary
from clusterpulse_metricsource.expr.parser import parse
from clusterpulse_metricsource.expr.tokenizer import Token, TokenType, tokenize
from clusterpulse_metricsource.expr.values import coerce_result, to_bool, to_float, to_string

from clusterpulse_core.contributions import Contribution, ContributionTable

PLUGIN_NAME = "metricsource"


def builtin_function_table() -> dict[str, Contribution]:
    """The built-in functions as contributions of plugin ``metricsource`` (for tests and the CLI)."""
    from clusterpulse_metricsource.functions import register_builtin_functions

    table = ContributionTable("functions")

    def register(name: str, impl: Any, /, **meta: Any) -> None:
        table.add(Contribution(name, impl, PLUGIN_NAME, meta))

    register_builtin_functions(register)
    return dict(table)


__all__ = [
    "Binary",
    "Call",
    "CompiledExpression",
    "Identifier",
    "Literal",
    "Node",
    "Token",
    "TokenType",
    "Unary",
    "builtin_function_table",
    "coerce_result",
    "compile_expression",
    "compile_tree",
    "function_impls",
    "interpret",
    "parse",
    "to_bool",
    "to_float",
    "to_string",
    "tokenize",
]
