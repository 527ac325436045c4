"""Wildcard patterns (``*`` any run of characters, ``?`` one character) matched in linear time.

Namespace and name patterns come from custom resources anyone with write access to them can
create, and they run on the hub and on every agent they are pushed to. A regular expression
built from them backtracks: 16 ``*?`` and a ``*!`` against a 35-character name took minutes in
Python's ``re``. This matcher never backtracks: it keeps the set of pattern positions that the
text read so far can have reached (a bit set, one bit per pattern position) and advances all of
them at once per character, so its work is one step per character of the text whatever the
pattern, and a pattern is at most :data:`MAX_PATTERN_LENGTH` characters (docs/security.md#patterns).

Semantics are those of an anchored regular expression where ``*`` is ``.*`` and ``?`` is ``.``
and everything else is literal: the whole text must match, case-sensitively, and neither ``*``
nor ``?`` matches a newline (as ``.`` does not).
"""

from __future__ import annotations

import attrs

#: Longest pattern accepted (a Kubernetes name is at most 253 characters).
MAX_PATTERN_LENGTH = 256

_STAR, _ONE = "*", "?"


class PatternError(ValueError):
    """A pattern that is not accepted (too long); the message says why."""


def has_wildcard(text: str) -> bool:
    """Whether ``text`` is a pattern (holds ``*`` or ``?``) rather than a literal name."""
    return _STAR in text or _ONE in text


def check_pattern(pattern: str) -> str:
    """``pattern`` when it is at most :data:`MAX_PATTERN_LENGTH` characters, else :class:`PatternError`."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"pattern is {len(pattern)} characters, longer than {MAX_PATTERN_LENGTH}")
    return pattern


@attrs.frozen
class MatchRun:
    """The outcome of matching one text, and the work it took (for tests and benchmarks)."""

    matched: bool
    #: Bit-set updates done: one per character read, plus the start.
    steps: int


def _collapse_stars(pattern: str) -> str:
    """Runs of ``*`` as one ``*`` (they match the same texts)."""
    out: list[str] = []
    for char in pattern:
        if char == _STAR and out and out[-1] == _STAR:
            continue
        out.append(char)
    return "".join(out)


@attrs.frozen
class Wildcard:
    """A compiled pattern; :meth:`matches` tells whether a whole text matches it.

    Bit ``i`` of a state stands for "the first ``i`` pattern characters have matched the text read
    so far"; the pattern matches when the bit of its length is set after the last character.
    """

    pattern: str
    _length: int
    #: Bits of the positions holding ``*`` (they may stay where they are on any character but a newline).
    _stars: int
    #: Bits of the positions holding ``?`` (they advance on any character but a newline).
    _any: int
    #: Per literal character, the bits of the positions holding it.
    _literals: dict[str, int]

    @classmethod
    def compile(cls, pattern: str) -> Wildcard:
        """The compiled ``pattern``; :class:`PatternError` when it is longer than :data:`MAX_PATTERN_LENGTH`."""
        check_pattern(pattern)
        body = _collapse_stars(pattern)
        stars = any_char = 0
        literals: dict[str, int] = {}
        for position, char in enumerate(body):
            bit = 1 << position
            if char == _STAR:
                stars |= bit
            elif char == _ONE:
                any_char |= bit
            else:
                literals[char] = literals.get(char, 0) | bit
        return cls(pattern, len(body), stars, any_char, literals)

    def _closure(self, state: int) -> int:
        # A ``*`` matches the empty run: reaching it also reaches the position after it (stars are
        # collapsed, so one shift suffices).
        return state | ((state & self._stars) << 1)

    def run(self, text: str) -> MatchRun:
        """Whether ``text`` as a whole matches, and the number of steps taken (``len(text) + 1`` at most)."""
        state = self._closure(1)
        steps = 1
        for char in text:
            if not state:
                break
            steps += 1
            if char == "\n":
                advancing = state & self._literals.get(char, 0)
                staying = 0
            else:
                advancing = state & (self._any | self._literals.get(char, 0))
                staying = state & self._stars
            state = self._closure((advancing << 1) | staying)
        return MatchRun(bool(state >> self._length & 1), steps)

    def matches(self, text: str) -> bool:
        """Whether ``text`` as a whole matches the pattern."""
        return self.run(text).matched
