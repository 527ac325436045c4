"""Logging set-up from ``LOG_LEVEL`` (docs/compatibility.md#manager)."""

from __future__ import annotations

import logging

_LEVELS = {"debug": logging.DEBUG, "trace": logging.DEBUG, "warn": logging.WARNING,
           "warning": logging.WARNING, "error": logging.ERROR}


def level_for(name: str) -> int:
    """``debug``/``trace``, ``warn``/``warning``, ``error`` (any case); anything else is info."""
    return _LEVELS.get(name.strip().lower(), logging.INFO)


def configure_logging(name: str) -> None:
    """Log to stderr at the level ``name`` gives, one line per record with the logger name."""
    logging.basicConfig(
        level=level_for(name),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        force=True,
    )
