"""Parsing expressions into trees (docs/compatibility.md#metricsource-language, strict per docs/compatibility.md#m4).

Precedence climbing over the levels in :data:`~.nodes.BINARY_LEVELS`; all binary operators
are left-associative and the prefix operators ``!`` and ``-`` bind tighter than any of them.
As in the original, errors inside the expression are collected (parsing goes on, with a
null literal standing in for a bad primary) and reported together as
``expression error: <m1>; <m2>``. Unlike the original, input left over after a complete
expression is an error (``1 2``, ``2 (3)``), and so is nesting deeper than
:data:`MAX_DEPTH` (the compiled form must stay within Python's own limits).
"""

from __future__ import annotations

from clusterpulse_metricsource.errors import ExpressionError
from clusterpulse_metricsource.expr.nodes import (
    BINARY_LEVELS,
    Binary,
    Call,
    Identifier,
    Literal,
    Node,
    Unary,
    depth,
)
from clusterpulse_metricsource.expr.tokenizer import Token, TokenType, tokenize

#: The deepest tree an expression may have.
MAX_DEPTH = 64
#: The deepest recursion of the parser (sub-expressions and prefix operators), which keeps
#: a pathological input from exhausting Python's stack before the tree can be checked.
MAX_NESTING = 100

_BINARY_TOKENS = {
    TokenType.COALESCE: "??",
    TokenType.OR: "||",
    TokenType.AND: "&&",
    TokenType.EQ: "==",
    TokenType.NEQ: "!=",
    TokenType.LT: "<",
    TokenType.LTE: "<=",
    TokenType.GT: ">",
    TokenType.GTE: ">=",
    TokenType.PLUS: "+",
    TokenType.MINUS: "-",
    TokenType.STAR: "*",
    TokenType.SLASH: "/",
    TokenType.PERCENT: "%",
}


class _Parser:
    """Recursive descent over one token list, collecting errors."""

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.index = 0
        self.nesting = 0
        self.errors: list[tuple[str, int]] = []

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        if token.type is not TokenType.EOF:
            self.index += 1
        return token

    def error(self, message: str, position: int) -> None:
        self.errors.append((message, position))

    def enter(self, position: int) -> None:
        """One level deeper into the recursion; too deep is an error."""
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise ExpressionError(f"expression error: nested more than {MAX_NESTING} levels deep", position, self.text)

    def expression(self, min_level: int = 1) -> Node:
        """A unary, then binary operators of level >= ``min_level`` (precedence climbing)."""
        self.enter(self.current.position)
        left = self.unary()
        while True:
            op = _BINARY_TOKENS.get(self.current.type)
            if op is None or BINARY_LEVELS[op] < min_level:
                self.nesting -= 1
                return left
            operator = self.advance()
            right = self.expression(BINARY_LEVELS[op] + 1)
            left = Binary(op, left, right, operator.position)

    def unary(self) -> Node:
        token = self.current
        if token.type in (TokenType.NOT, TokenType.MINUS):
            self.advance()
            self.enter(token.position)
            operand = self.unary()
            self.nesting -= 1
            return Unary(token.literal, operand, token.position)
        return self.primary()

    def primary(self) -> Node:
        token = self.advance()
        kind = token.type
        if kind is TokenType.NUMBER:
            try:
                return Literal(float(token.literal), token.position)
            except ValueError:
                self.error(f"invalid number: {token.literal}", token.position)
                return Literal(None, token.position)
        if kind is TokenType.STRING:
            return Literal(token.literal, token.position)
        if kind is TokenType.BOOL:
            return Literal(token.literal.lower() == "true", token.position)
        if kind is TokenType.NULL:
            return Literal(None, token.position)
        if kind is TokenType.IDENT:
            if self.current.type is TokenType.LPAREN:
                return self.call(token)
            return Identifier(token.literal, token.position)
        if kind is TokenType.LPAREN:
            inner = self.expression()
            if self.current.type is TokenType.RPAREN:
                self.advance()
            else:
                self.error("expected ')' after grouped expression", self.current.position)
            return inner
        self.error(f"unexpected token: {token.literal}", token.position)
        return Literal(None, token.position)

    def call(self, name: Token) -> Node:
        self.advance()  # the "("
        args: list[Node] = []
        if self.current.type is TokenType.RPAREN:
            self.advance()
            return Call(name.literal, (), name.position)
        while True:
            args.append(self.expression())
            if self.current.type is not TokenType.COMMA:
                break
            self.advance()
        if self.current.type is TokenType.RPAREN:
            self.advance()
        else:
            self.error("expected ')' after function arguments", self.current.position)
        return Call(name.literal, tuple(args), name.position)

    def parse(self) -> Node:
        node = self.expression()
        if not self.errors and self.current.type is not TokenType.EOF:
            self.error(f"unexpected {self.current.literal!r} after the end of the expression", self.current.position)
        if self.errors:
            message = "expression error: " + "; ".join(message for message, _ in self.errors)
            raise ExpressionError(message, self.errors[0][1], self.text)
        if depth(node) > MAX_DEPTH:
            raise ExpressionError(f"expression error: nested more than {MAX_DEPTH} levels deep", 0, self.text)
        return node


def parse(text: str) -> Node:
    """The syntax tree of ``text``; raises :class:`ExpressionError` with the error position."""
    return _Parser(text, tokenize(text)).parse()
