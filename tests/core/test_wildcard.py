"""The linear-time wildcard matcher agrees with the anchored regular expression it replaces."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterpulse_core.wildcard import MAX_PATTERN_LENGTH, PatternError, Wildcard, check_pattern, has_wildcard


def _reference(pattern: str) -> re.Pattern[str]:
    """What the Go controller compiled: every metacharacter escaped, then ``*`` -> ``.*``, ``?`` -> ``.``."""
    return re.compile(re.escape(pattern).replace(r"\*", ".*").replace(r"\?", "."))


@settings(max_examples=3000, deadline=None)
@given(st.text("ab*?.\n", max_size=8), st.text("ab.\n*?", max_size=10))
def test_it_matches_exactly_what_the_regular_expression_matches(pattern: str, text: str) -> None:
    expected = _reference(pattern).fullmatch(text) is not None
    run = Wildcard.compile(pattern).run(text)
    assert run.matched is expected
    assert run.steps <= len(text) + 1


@pytest.mark.parametrize(
    ("pattern", "text", "matched"),
    [
        ("kube-*", "kube-system", True),
        ("kube-*", "kube", False),
        ("*", "", True),
        ("", "", True),
        ("?", "", False),
        ("a*b*c", "abbbc", True),
        ("a*b*c", "acb", False),
        ("x", "x\n", False),
        ("*", "a\nb", False),
        ("a\n*", "a\nb", True),
        ("A*", "a", False),
        ("a**b", "ab", True),
    ],
)
def test_examples(pattern: str, text: str, matched: bool) -> None:
    assert Wildcard.compile(pattern).matches(text) is matched


def test_the_length_cap() -> None:
    assert check_pattern("*" * MAX_PATTERN_LENGTH) == "*" * MAX_PATTERN_LENGTH
    with pytest.raises(PatternError, match=f"longer than {MAX_PATTERN_LENGTH}"):
        Wildcard.compile("a" * (MAX_PATTERN_LENGTH + 1))
    assert has_wildcard("a?") and has_wildcard("*") and not has_wildcard("a.b")
