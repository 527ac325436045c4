"""The expression syntax tree: frozen nodes built by the parser.

Every node carries the character ``position`` where it starts in the source, for error
messages; positions do not take part in equality, so two trees of the same expression
compare equal however they were spaced.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

#: Binary operators, by precedence level (lowest first).
BINARY_LEVELS: dict[str, int] = {
    "??": 1,
    "||": 2,
    "&&": 3,
    "==": 4,
    "!=": 4,
    "<": 5,
    "<=": 5,
    ">": 5,
    ">=": 5,
    "+": 6,
    "-": 6,
    "*": 7,
    "/": 7,
    "%": 7,
}
UNARY_OPERATORS = ("-", "!")


@attrs.frozen
class Literal:
    """A constant: None, a bool, a float or a string (ints only appear after folding)."""

    value: bool | int | float | str | None
    position: int = attrs.field(default=0, eq=False)


@attrs.frozen
class Identifier:
    """A reference to a value of the evaluation context (nil when absent)."""

    name: str
    position: int = attrs.field(default=0, eq=False)


@attrs.frozen
class Unary:
    """``-x`` or ``!x``."""

    op: str
    operand: Node
    position: int = attrs.field(default=0, eq=False)


@attrs.frozen
class Binary:
    """``left op right`` for one of :data:`BINARY_LEVELS`."""

    op: str
    left: Node
    right: Node
    position: int = attrs.field(default=0, eq=False)


@attrs.frozen
class Call:
    """A function call; the name is case-sensitive and resolved at compile time (M5)."""

    name: str
    args: tuple[Node, ...]
    position: int = attrs.field(default=0, eq=False)


Node = Literal | Identifier | Unary | Binary | Call


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of ``node``, left to right."""
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Call):
        return node.args
    return ()


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree in source order (pre-order, left to right), without recursion."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def depth(node: Node) -> int:
    """The number of nodes on the longest path from ``node`` to a leaf, without recursion."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(current))
    return deepest


def references(node: Node) -> tuple[str, ...]:
    """The identifier names used in the tree, unique, in order of first appearance."""
    seen: dict[str, None] = {}
    for current in walk(node):
        if isinstance(current, Identifier):
            seen.setdefault(current.name, None)
    return tuple(seen)
