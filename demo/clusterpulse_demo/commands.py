"""``clusterpulse demo``, added through ``clusterpulse_add_commands`` when clusterpulse-demo is installed.

Registered under the entry-point group ``clusterpulse.commands``, so a production install
(core + plugins) has no ``demo`` command.
"""

from __future__ import annotations

import click

from clusterpulse_core import hookimpl
from clusterpulse_core.cli import config_file
from clusterpulse_core.cliutils import fail
from clusterpulse_core.config import ConfigError
from clusterpulse_core.plugins import PluginError, PluginHost


@click.command("demo")
@click.option(
    "--cycles",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="reconcile cycles to run before printing the summary and exiting",
)
@click.option("--redis-url", default=None, help="use this Redis instead of starting a private redis-server")
@click.pass_context
def demo_cmd(ctx: click.Context, cycles: int, redis_url: str | None) -> None:
    """Run the real manager and plugins on an emulated demo fleet, then summarise Redis.

    With ``--config FILE``, the plugins that file enables run too, beside the demo's (a
    third-party backend or kind); the demo's own plugins keep the demo's settings.
    """
    from clusterpulse_core.logs import configure_logging
    from clusterpulse_demo.run import DemoError, run_demo

    configure_logging("warn")
    try:
        run_demo(cycles, redis_url, echo=click.echo, config_file=config_file(ctx))
    except (DemoError, PluginError, ConfigError) as exc:
        fail(str(exc))


class DemoCommands:
    """Adds ``demo`` to the ``clusterpulse`` command."""

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group, plugins: PluginHost) -> None:
        """Add the ``demo`` command."""
        cli.add_command(demo_cmd)
