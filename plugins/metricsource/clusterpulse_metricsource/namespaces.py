"""Namespace wildcard patterns (docs/compatibility.md#metricsource-wire), the include/exclude filter
(docs/compatibility.md#metricsource-wire) and the list strategy (docs/compatibility.md#metricsource-wire)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import attrs

from clusterpulse_core.wildcard import Wildcard, has_wildcard

_GO_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


def quote_meta(text: str) -> str:
    """Go's ``regexp.QuoteMeta``: a backslash before each of ``\\.+*?()|[]{}^$``."""
    return _GO_META.sub(r"\\\1", text)


def wildcard_regex(pattern: str) -> str:
    """The anchored regular expression of a wildcard pattern (``*`` any run, ``?`` one character).

    Informative only (the vectors' ``regex``, what the Go controller compiled): matching goes
    through :class:`~clusterpulse_core.wildcard.Wildcard`, which does not backtrack.
    """
    escaped = quote_meta(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return f"^{escaped}$"


def compile_wildcard(pattern: str) -> Wildcard:
    """The compiled pattern, matched in linear time (docs/security.md#patterns).

    Raises :class:`~clusterpulse_core.wildcard.PatternError` for a pattern longer than the cap.
    """
    return Wildcard.compile(pattern)


def wildcard_match(pattern: str, text: str) -> bool:
    """Whether ``text`` as a whole matches the wildcard ``pattern`` (case-sensitive)."""
    return compile_wildcard(pattern).matches(text)


@attrs.frozen
class NamespaceFilter:
    """Compiled include/exclude patterns; exclude wins, no include patterns means all."""

    include: tuple[Wildcard, ...] = ()
    exclude: tuple[Wildcard, ...] = ()

    @classmethod
    def from_patterns(cls, include: Sequence[str] | None, exclude: Sequence[str] | None) -> NamespaceFilter:
        """Compile the wildcard patterns; :class:`~clusterpulse_core.wildcard.PatternError` for one too long."""
        return cls(tuple(compile_wildcard(p) for p in include or ()), tuple(compile_wildcard(p) for p in exclude or ()))

    def keeps(self, namespace: str) -> bool:
        """Whether ``namespace`` passes the filter."""
        if any(p.matches(namespace) for p in self.exclude):
            return False
        return not self.include or any(p.matches(namespace) for p in self.include)

    def select(self, namespaces: Iterable[str]) -> list[str]:
        """The namespaces that pass, in input order."""
        return [ns for ns in namespaces if self.keeps(ns)]


def uses_cluster_wide_list(include: Sequence[str] | None, exclude: Sequence[str] | None, has_namespaces: bool) -> bool:
    """Whether a namespaced source is listed cluster-wide and post-filtered (docs/compatibility.md#metricsource-wire).

    True without a namespace selector, with any exclude pattern, or with any include pattern
    holding a wildcard; false for exact include names only (one list per namespace).
    """
    if not has_namespaces:
        return True
    if exclude:
        return True
    return any(has_wildcard(pattern) for pattern in include or ())
