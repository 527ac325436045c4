"""Conventions every ``clusterpulse`` command follows, for plugin commands too.

* Errors go to stderr as ``error: <message>`` (one line per problem) with exit status 1:
  raise :class:`click.ClickException` or call :func:`fail`.
* ``-`` means standard input wherever a file is read: use :func:`read_text`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

#: The file name that means standard input.
STDIN = "-"


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: <line>`` for every line of ``message`` on stderr and exit with ``code``."""
    for line in str(message).splitlines() or [""]:
        click.echo(f"error: {line}", err=True)
    sys.exit(code)


def warn(message: str) -> None:
    """Print ``warning: <line>`` for every line of ``message`` on stderr."""
    for line in str(message).splitlines():
        click.echo(f"warning: {line}", err=True)


def read_text(path: str | Path) -> str:
    """The text of file ``path``, or of standard input for ``-``; a missing file is a ClickException."""
    if str(path) == STDIN:
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise click.ClickException(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise click.ClickException(f"{path}: is a directory, expected a file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"{path}: cannot be read: {exc}") from exc


def input_name(path: str | Path) -> str:
    """How to name ``path`` in a message (``<stdin>`` for ``-``)."""
    return "<stdin>" if str(path) == STDIN else str(path)
