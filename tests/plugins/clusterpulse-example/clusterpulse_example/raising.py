"""A plugin whose command fails with an unexpected exception (the CLI turns it into one ``error:`` line)."""

from __future__ import annotations

import click

from clusterpulse_core import hookimpl

clusterpulse_api_version = 1


@hookimpl
def clusterpulse_add_commands(cli: click.Group) -> None:
    """``clusterpulse example-raise``: always raises ``RuntimeError``."""

    @cli.command("example-raise")
    def example_raise() -> None:
        """Fail with an unexpected exception."""
        raise RuntimeError("example-raise always fails")
