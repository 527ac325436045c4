"""A complete small plugin: settings, a kind with its reconcile, a function, a collector, a CLI command."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import click
from clusterpulse_model.pieces import ClusterLabelsPiece

from clusterpulse_core import hookimpl
from clusterpulse_core.collect import ClusterTarget, Collector
from clusterpulse_core.config import Config, setting
from clusterpulse_core.context import ReconcileContext
from clusterpulse_core.kinds import ObjectRef, PrinterColumn, ReconcileResult, ResourceKind
from clusterpulse_core.pieces import Piece

GREETING = ResourceKind(
    group="example.clusterpulse.io",
    version="v1",
    kind="Greeting",
    plural="greetings",
    short_names=("gr",),
    printer_columns=(PrinterColumn("Phase", "string", ".status.phase"),),
    schema={
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
)


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
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        return [GREETING]

    @hookimpl
    def clusterpulse_reconcile(
        self, kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext
    ) -> ReconcileResult:
        target = (obj.get("spec") or {}).get("to", "")
        if not target:
            ctx.patch_status({"phase": "Error", "message": "spec.to: required"})
            return ReconcileResult(requeue_after=30, error="spec.to: required")
        ctx.patch_status({"phase": "Greeted", "message": f"{self.settings.greeting}, {target}"})
        return ReconcileResult(requeue_after=60)

    @hookimpl
    def clusterpulse_forget(self, kind: ResourceKind, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        ctx.log.info("forgot %s", ref)
        return True

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
