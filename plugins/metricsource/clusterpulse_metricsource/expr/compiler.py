"""Compiling expression trees into fast Python functions.

A tree is checked (M5: every function exists and gets an allowed number of arguments),
constant-folded, and translated into the source of one Python function of the context,
which is compiled once. The generated text is built only from names this module makes up
(``_v0``, ``_s1``, ``_add`` ...): every user-supplied string, number, identifier and
function reaches the code as a bound default argument, never as source text, so nothing
the user wrote is ever evaluated as Python. Context values are fetched once per
evaluation; each operator is one call to a helper of :mod:`.ops`, with no dispatch on node
types at evaluation time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs
from clusterpulse_metricsource.errors import ExpressionError
from clusterpulse_metricsource.expr import ops
from clusterpulse_metricsource.expr.nodes import (
    Binary,
    Call,
    Identifier,
    Literal,
    Node,
    Unary,
    depth,
    references,
    walk,
)
from clusterpulse_metricsource.expr.parser import MAX_DEPTH, parse
from clusterpulse_metricsource.expr.values import to_bool

_EMPTY: Mapping[str, Any] = MappingProxyType({})
Evaluator = Callable[[Mapping[str, Any]], Any]


@attrs.frozen
class CompiledExpression:
    """An expression ready to evaluate many times.

    ``references`` are the identifiers it reads, unique, in order of first appearance;
    ``code`` is the generated Python source (for inspection and debugging).
    """

    source: str
    references: tuple[str, ...]
    tree: Node = attrs.field(repr=False)
    code: str = attrs.field(repr=False, eq=False)
    _evaluator: Evaluator = attrs.field(repr=False, eq=False, alias="evaluator")

    def evaluate(self, values: Mapping[str, Any] | None) -> Any:
        """The value in the context ``values`` (None: no context; missing names are nil).

        Data never makes this fail: a non-finite result is None (M3). Only an error of a
        function (a third-party one; the built-ins do not raise) surfaces, as
        :class:`ExpressionError`.
        """
        try:
            result = self._evaluator(_EMPTY if values is None else values)
        except ExpressionError:
            raise
        except Exception as exc:
            raise ExpressionError(f"evaluation failed: {exc}", None, self.source) from exc
        if type(result) is float and result - result != 0.0:
            return None
        return result


def function_impls(tree: Node, functions: Mapping[str, Any], source: str = "") -> dict[str, Callable[..., Any]]:
    """M5: the implementation of every function the tree calls, by name.

    ``functions`` maps names to contributions (``.impl``, ``.meta`` with ``min_args`` and
    ``max_args``). An unknown name or a wrong number of arguments raises
    :class:`ExpressionError` naming the function, at the call's position.
    """
    impls: dict[str, Callable[..., Any]] = {}
    for node in walk(tree):
        if not isinstance(node, Call):
            continue
        entry = functions.get(node.name)
        if entry is None:
            raise ExpressionError(f"unknown function: {node.name}", node.position, source)
        meta = getattr(entry, "meta", {}) or {}
        min_args = meta.get("min_args", 0) or 0
        max_args = meta.get("max_args")
        if len(node.args) < min_args:
            raise ExpressionError(f"function {node.name} requires at least {min_args} arguments", node.position, source)
        if max_args is not None and len(node.args) > max_args:
            raise ExpressionError(f"function {node.name} accepts at most {max_args} arguments", node.position, source)
        impl = getattr(entry, "impl", entry)
        plugin = getattr(entry, "plugin", BUILTIN_PLUGIN)
        impls[node.name] = impl if plugin == BUILTIN_PLUGIN else _named(node.name, impl, source)
    return impls


#: The plugin whose functions are the built-ins (they never raise, so they are not wrapped).
BUILTIN_PLUGIN = "metricsource"


def _named(name: str, impl: Callable[..., Any], source: str) -> Callable[..., Any]:
    """``impl`` raising :class:`FunctionError` (which names it) instead of whatever it raised."""
    from clusterpulse_metricsource.failures import FunctionError

    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except Exception as exc:
            raise FunctionError(name, exc, source) from exc

    return call


def _finite_results(functions: Mapping[str, Any], names: Iterable[str]) -> frozenset[str]:
    """Those of ``names`` registered with ``finite_results=True``: they never return a NaN
    or an infinity, so their results need no M3 check."""
    return frozenset(name for name in names if (getattr(functions[name], "meta", None) or {}).get("finite_results"))


def fold_constants(node: Node) -> Node:
    """The tree with every operator over constants replaced by its value.

    Function calls are never folded (``now()`` changes); ``&&``, ``||`` and ``??`` with a
    constant left side are reduced as their short-circuit rules allow.
    """
    if isinstance(node, Unary):
        operand = fold_constants(node.operand)
        if isinstance(operand, Literal):
            value = (not to_bool(operand.value)) if node.op == "!" else ops.neg(operand.value)
            return Literal(value, node.position)
        return Unary(node.op, operand, node.position)
    if isinstance(node, Binary):
        return _fold_binary(node.op, fold_constants(node.left), fold_constants(node.right), node.position)
    if isinstance(node, Call):
        return Call(node.name, tuple(fold_constants(arg) for arg in node.args), node.position)
    return node


def _as_boolean(node: Node, position: int) -> Node:
    """``toBool(node)`` as a tree (``!!node``), folded when constant."""
    if isinstance(node, Literal):
        return Literal(to_bool(node.value), position)
    return Unary("!", Unary("!", node, position), position)


def _fold_binary(op: str, left: Node, right: Node, position: int) -> Node:
    if isinstance(left, Literal):
        if op == "&&":
            return _as_boolean(right, position) if to_bool(left.value) else Literal(False, position)
        if op == "||":
            return Literal(True, position) if to_bool(left.value) else _as_boolean(right, position)
        if op == "??":
            return left if left.value is not None else right
        if isinstance(right, Literal):
            return Literal(ops.BINARY_HELPERS[op](left.value, right.value), position)
    return Binary(op, left, right, position)


# Kinds of generated sub-expressions: what a value is known to be at compile time.
_BOOL, _STR, _NONE, _ANY = "bool", "str", "none", "any"

_HELPERS: dict[str, Callable[..., Any]] = {
    "_truthy": ops.truthy,
    "_neg": ops.neg,
    "_concat": ops.concat,
    "_fin": ops.fin,
    "_add": ops.add,
    "_sub": ops.sub,
    "_mul": ops.mul,
    "_div": ops.div,
    "_mod": ops.mod,
    "_eq": ops.eq,
    "_ne": ops.ne,
    "_lt": ops.lt,
    "_le": ops.le,
    "_gt": ops.gt,
    "_ge": ops.ge,
}
_OPERATOR_HELPERS = {
    "+": "_add",
    "-": "_sub",
    "*": "_mul",
    "/": "_div",
    "%": "_mod",
    "==": "_eq",
    "!=": "_ne",
    "<": "_lt",
    "<=": "_le",
    ">": "_gt",
    ">=": "_ge",
}


class _Generator:
    """Builds the Python source of one evaluator and the values it binds."""

    def __init__(self, impls: Mapping[str, Callable[..., Any]], finite_results: frozenset[str]) -> None:
        self.impls = impls
        self.finite_results = finite_results
        self.bindings: dict[str, Any] = dict(_HELPERS)
        self.variables: dict[str, str] = {}
        self.functions: dict[str, str] = {}
        self.temporaries = 0

    def bind(self, prefix: str, value: Any) -> str:
        name = f"{prefix}{len(self.bindings)}"
        self.bindings[name] = value
        return name

    def function_source(self, tree: Node) -> str:
        body, _kind = self.generate(tree)
        fetches = [f"    {variable} = get({self.bind('_k', name)})" for name, variable in self.variables.items()]
        parameters = ", ".join(f"{name}={name}" for name in self.bindings)
        lines = [f"def _expression(ctx, *, {parameters}):"]
        if fetches:
            lines += ["    get = ctx.get", *fetches]
        lines.append(f"    return {body}")
        return "\n".join(lines) + "\n"

    def generate(self, node: Node) -> tuple[str, str]:
        """The Python expression computing ``node``, and its kind."""
        if isinstance(node, Literal):
            return self.literal(node.value)
        if isinstance(node, Identifier):
            variable = self.variables.setdefault(node.name, f"_v{len(self.variables)}")
            return variable, _ANY
        if isinstance(node, Unary):
            code, kind = self.generate(node.operand)
            if node.op == "!":
                return f"(not {self.boolean(code, kind)})", _BOOL
            return f"_neg({code})", _ANY
        if isinstance(node, Binary):
            return self.binary(node)
        function = self.functions.get(node.name)
        if function is None:
            function = self.functions[node.name] = self.bind("_f", self.impls[node.name])
        call = f"{function}({', '.join(self.generate(arg)[0] for arg in node.args)})"
        return (call if node.name in self.finite_results else f"_fin({call})"), _ANY

    def literal(self, value: Any) -> tuple[str, str]:
        if value is None:
            return "None", _NONE
        if value is True or value is False:
            return repr(value), _BOOL
        if type(value) is str:
            return self.bind("_s", value), _STR
        return self.bind("_c", value), _ANY

    @staticmethod
    def boolean(code: str, kind: str) -> str:
        return code if kind == _BOOL else f"_truthy({code})"

    def binary(self, node: Binary) -> tuple[str, str]:
        left, left_kind = self.generate(node.left)
        right, right_kind = self.generate(node.right)
        op = node.op
        if op == "&&":
            return f"({self.boolean(right, right_kind)} if {self.boolean(left, left_kind)} else False)", _BOOL
        if op == "||":
            return f"(True if {self.boolean(left, left_kind)} else {self.boolean(right, right_kind)})", _BOOL
        if op == "??":
            if left_kind in (_BOOL, _STR):
                return left, left_kind
            if left_kind == _NONE:
                return right, right_kind
            temporary = f"_t{self.temporaries}"
            self.temporaries += 1
            kind = left_kind if left_kind == right_kind else _ANY
            return f"({right} if ({temporary} := {left}) is None else {temporary})", kind
        if op == "+" and (left_kind == _STR or right_kind == _STR):
            if left_kind == _STR and right_kind == _STR:
                return f"({left} + {right})", _STR
            return f"_concat({left}, {right})", _STR
        if op in ("==", "!=") and left_kind == right_kind and left_kind in (_STR, _BOOL):
            return f"({left} {op} {right})", _BOOL
        kind = _BOOL if op in ("==", "!=", "<", "<=", ">", ">=") else _ANY
        return f"{_OPERATOR_HELPERS[op]}({left}, {right})", kind


def compile_tree(tree: Node, functions: Mapping[str, Any], source: str = "") -> CompiledExpression:
    """Compile a syntax tree; raises :class:`ExpressionError` for M5 violations and for a
    tree deeper than the parser allows."""
    if depth(tree) > MAX_DEPTH:
        raise ExpressionError(f"expression error: nested more than {MAX_DEPTH} levels deep", 0, source)
    impls = function_impls(tree, functions, source)
    generator = _Generator(impls, _finite_results(functions, impls))
    code = generator.function_source(fold_constants(tree))
    namespace: dict[str, Any] = {"__builtins__": {}, **generator.bindings}
    exec(compile(code, "<metricsource expression>", "exec"), namespace)
    return CompiledExpression(source, references(tree), tree, code, namespace["_expression"])


def compile_expression(text: str, functions: Mapping[str, Any]) -> CompiledExpression:
    """Parse and compile ``text``; syntax errors (M4) and function errors (M5) raise
    :class:`ExpressionError` with the position."""
    return compile_tree(parse(text), functions, text)
