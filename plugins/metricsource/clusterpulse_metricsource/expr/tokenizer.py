"""Lexical analysis of computed-field expressions (docs/compatibility.md#metricsource-language with
docs/compatibility.md#m4).

The input is scanned as UTF-8 bytes, as the original does: an identifier byte at or above
0x80 must be a letter when read as Latin-1. Strictness follows M4: any character outside
the language (a lone ``=``, ``&``, ``|``, ``?``, ``.``, ``@`` ...) and an unterminated
string are errors, number literals take an exponent (``1e3``) and string literals decode
``\\\\ \\' \\" \\n \\t``. Token positions are character offsets into the source text.
"""

from __future__ import annotations

import enum

import attrs
from clusterpulse_metricsource.errors import ExpressionError


class TokenType(enum.Enum):
    """Token kinds; the names are the ones the reference vectors use."""

    EOF = "EOF"
    NUMBER = "NUMBER"
    STRING = "STRING"
    IDENT = "IDENT"
    BOOL = "BOOL"
    NULL = "NULL"
    PLUS = "+"
    MINUS = "-"
    STAR = "*"
    SLASH = "/"
    PERCENT = "%"
    EQ = "=="
    NEQ = "!="
    LT = "<"
    LTE = "<="
    GT = ">"
    GTE = ">="
    AND = "&&"
    OR = "||"
    NOT = "!"
    COALESCE = "??"
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","


@attrs.frozen
class Token:
    """One token: its type, its literal (decoded text for strings, source text otherwise)
    and the character offset where it starts."""

    type: TokenType
    literal: str
    position: int


_TWO_CHAR = {
    b"==": TokenType.EQ,
    b"!=": TokenType.NEQ,
    b"<=": TokenType.LTE,
    b">=": TokenType.GTE,
    b"&&": TokenType.AND,
    b"||": TokenType.OR,
    b"??": TokenType.COALESCE,
}
_ONE_CHAR = {
    ord("+"): TokenType.PLUS,
    ord("-"): TokenType.MINUS,
    ord("*"): TokenType.STAR,
    ord("/"): TokenType.SLASH,
    ord("%"): TokenType.PERCENT,
    ord("<"): TokenType.LT,
    ord(">"): TokenType.GT,
    ord("!"): TokenType.NOT,
    ord("("): TokenType.LPAREN,
    ord(")"): TokenType.RPAREN,
    ord(","): TokenType.COMMA,
}
_WHITESPACE = frozenset(b" \t\n\r")
_DIGIT = frozenset(b"0123456789")
_ESCAPES = {ord("n"): b"\n", ord("t"): b"\t"}
# A byte that may start an identifier: ASCII letters, '_', and the Latin-1 letters.
_IDENT_START = frozenset(b for b in range(256) if b == ord("_") or chr(b).isalpha())
_IDENT_PART = _IDENT_START | _DIGIT


class _Scanner:
    """Turns one expression's bytes into tokens."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.offset = 0

    def char_position(self, byte_offset: int) -> int:
        """The character offset in the source text of a byte offset."""
        return len(self.data[:byte_offset].decode("utf-8", "ignore"))

    def fail(self, message: str, byte_offset: int) -> ExpressionError:
        """An error naming the position of ``byte_offset``."""
        return ExpressionError(f"expression error: {message}", self.char_position(byte_offset), self.text)

    def decode(self, start: int, end: int) -> str:
        """The source text of bytes ``[start, end)``."""
        return self.data[start:end].decode("utf-8", "surrogatepass")

    def tokens(self) -> list[Token]:
        """Every token up to and including EOF."""
        result: list[Token] = []
        data = self.data
        while True:
            while self.offset < len(data) and data[self.offset] in _WHITESPACE:
                self.offset += 1
            start = self.offset
            if start >= len(data):
                result.append(Token(TokenType.EOF, "", len(self.text)))
                return result
            result.append(self.next_token(start))

    def next_token(self, start: int) -> Token:
        """The token that starts at byte ``start`` (not whitespace, not end of input)."""
        data = self.data
        byte = data[start]
        position = self.char_position(start)
        pair = data[start : start + 2]
        if pair in _TWO_CHAR:
            self.offset = start + 2
            return Token(_TWO_CHAR[pair], pair.decode(), position)
        if byte in _ONE_CHAR:
            self.offset = start + 1
            return Token(_ONE_CHAR[byte], chr(byte), position)
        if byte in _DIGIT:
            return Token(TokenType.NUMBER, self.number(start), position)
        if byte in (ord("'"), ord('"')):
            return Token(TokenType.STRING, self.string(start), position)
        if byte in _IDENT_START:
            end = start + 1
            while end < len(data) and data[end] in _IDENT_PART:
                end += 1
            self.offset = end
            # "replace": an identifier can only stop inside a character when an invalid
            # byte follows, and that byte fails the next token anyway.
            word = self.data[start:end].decode("utf-8", "replace")
            lowered = word.lower()
            if lowered in ("true", "false"):
                return Token(TokenType.BOOL, word, position)
            if lowered in ("null", "nil"):
                return Token(TokenType.NULL, word, position)
            return Token(TokenType.IDENT, word, position)
        shown = self.text[position] if position < len(self.text) else repr(bytes([byte]))
        raise self.fail(f"unexpected character {shown!r}", start)

    def number(self, start: int) -> str:
        """A run of digits and dots, then an optional exponent (``e``, sign, digits)."""
        data = self.data
        end = start
        while end < len(data) and (data[end] in _DIGIT or data[end] == ord(".")):
            end += 1
        if end < len(data) and data[end] in b"eE":
            digits_at = end + 1
            if digits_at < len(data) and data[digits_at] in b"+-":
                digits_at += 1
            if digits_at < len(data) and data[digits_at] in _DIGIT:
                end = digits_at
                while end < len(data) and data[end] in _DIGIT:
                    end += 1
        self.offset = end
        return self.decode(start, end)

    def string(self, start: int) -> str:
        """A quoted string with its escapes decoded; unterminated is an error."""
        data = self.data
        quote = data[start]
        out = bytearray()
        index = start + 1
        while index < len(data):
            byte = data[index]
            if byte == quote:
                self.offset = index + 1
                return out.decode("utf-8", "surrogatepass")
            if byte == ord("\\"):
                index += 1
                if index >= len(data):
                    break
                escaped = data[index]
                out += _ESCAPES.get(escaped, bytes([escaped]))
            else:
                out.append(byte)
            index += 1
        raise self.fail("unterminated string", start)


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with one EOF token; raises :class:`ExpressionError`."""
    return _Scanner(text).tokens()
