"""``eventually``: the one poll-until helper of the test suite."""

from __future__ import annotations

import itertools

import pytest
from clusterpulse_testing.polling import eventually


def test_returns_the_first_truthy_value() -> None:
    counter = itertools.count()
    assert eventually(lambda: next(counter) >= 3 and "done", "the counter", timeout=60, interval=0) == "done"


def test_fails_naming_what_it_waited_for_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"timed out after 0\.05 s waiting for the impossible \(last value: 0\)"):
        eventually(lambda: 0, "the impossible", timeout=0.05)


def test_an_exception_in_the_condition_propagates_at_once() -> None:
    def broken() -> bool:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        eventually(broken, "a broken condition", timeout=60)


def test_the_bound_is_required_and_positive() -> None:
    with pytest.raises(ValueError, match="timeout must be positive"):
        eventually(lambda: True, "anything", timeout=0)
