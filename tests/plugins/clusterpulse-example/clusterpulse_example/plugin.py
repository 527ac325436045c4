"""A complete small plugin: settings, a function, a collector, a CLI command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import click

from clusterpulse_core import hookimpl
from clusterpulse_core.collect import ClusterTarget, Collector
from clusterpulse_core.config import Config, setting
from clusterpulse_core.pieces import ClusterLabelsPiece, Piece


@attrs.frozen
class ExampleSettings:
    """``[plugins.example]``."""

    greeting: str = setting("hello", env="EXAMPLE_GREETING", help="what `clusterpulse example` says")
    repeat: int = setting(1, minimum=1, help="how many times")
    token: str = setting("", secret=True, help="a secret, masked in `config show`")


def shout(text: Any) -> str:
    """``shout('hi')`` -> ``'HI!'``."""
    return f"{text}".upper() + "!"


class ExamplePlugin:
    """Greets, shouts, and labels every cluster it collects from."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.settings = ExampleSettings()

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        return ExampleSettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: ExampleSettings) -> None:
        self.settings = settings

    @hookimpl
    def clusterpulse_register_functions(self, register: Any) -> None:
        register("shout", shout, min_args=1, max_args=1)

    @hookimpl
    def clusterpulse_collectors(self) -> Sequence[Collector]:
        def collect(target: ClusterTarget) -> Sequence[Piece]:
            return [ClusterLabelsPiece(target.name, {"greeted": self.settings.greeting})]

        return [Collector("example-greeting", collect)]

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group) -> None:
        @cli.command("example")
        def example() -> None:
            """Print the configured greeting."""
            for _ in range(self.settings.repeat):
                click.echo(self.settings.greeting)
