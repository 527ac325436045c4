"""Error types raised by the MetricSource plugin.

Every error the plugin raises derives from :class:`MetricSourceError`, so a
caller can catch the whole family with one ``except`` clause.
"""

from __future__ import annotations


class MetricSourceError(Exception):
    """Base of every error this plugin raises."""


class ExpressionError(MetricSourceError):
    """An expression that cannot be tokenized, parsed, compiled or evaluated.

    ``position`` is the 0-based character offset in ``expression`` where the
    problem was found, when known.
    """

    def __init__(self, message: str, position: int | None = None, expression: str = "") -> None:
        self.message = message
        self.position = position
        self.expression = expression
        super().__init__(message, position, expression)

    def __str__(self) -> str:
        if self.position is None:
            return self.message
        return f"{self.message} at position {self.position}"


class CompileError(MetricSourceError):
    """An invalid MetricSource definition; the message names the field."""


class ExtractionError(MetricSourceError):
    """A resource or field that could not be extracted from collected data."""
