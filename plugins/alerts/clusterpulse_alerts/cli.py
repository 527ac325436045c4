"""``clusterpulse alerts``: the firing alerts, as storage holds them (the API's view)."""

from __future__ import annotations

import json
import sys

import click

from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.serde import unstructure

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


def make_alerts_command(plugins: PluginHost) -> click.Command:
    """The command, reading through ``clusterpulse_stored_alerts`` (the redis plugin answers)."""

    @click.command("alerts")
    @click.option("--json", "as_json", is_flag=True, help="machine-readable output")
    @click.option("--cluster", default=None, help="only this cluster (or registry)")
    @click.option(
        "--severity", type=click.Choice(["critical", "warning", "info"]), default=None, help="only this severity"
    )
    def alerts_cmd(as_json: bool, cluster: str | None, severity: str | None) -> None:
        """List the firing alerts (from Redis), most severe first."""
        hook = plugins.hook("clusterpulse_stored_alerts")
        if hook is None or not hook.get_hookimpls():
            click.echo("error: no enabled plugin stores alerts (enable redis)", err=True)
            sys.exit(1)
        try:
            alerts = [alert for found in hook() for alert in found or ()]
        except Exception as exc:
            click.echo(f"error: cannot read alerts: {type(exc).__name__}: {exc}", err=True)
            sys.exit(1)
        alerts = [
            a
            for a in alerts
            if (cluster is None or a.cluster == cluster) and (severity is None or a.severity == severity)
        ]
        alerts.sort(key=lambda a: (_SEVERITY_ORDER.get(a.severity, 9), a.cluster, a.name, a.resource_name))
        if as_json:
            click.echo(json.dumps([unstructure(a) for a in alerts], indent=2))
            return
        if not alerts:
            click.echo("no alerts firing")
            return
        click.echo(format_alerts([unstructure(a) for a in alerts]))

    return alerts_cmd


def format_alerts(rows: list[dict[str, str]]) -> str:
    """A table: severity, cluster, alert, resource, since, message."""
    header = ("SEVERITY", "CLUSTER", "ALERT", "RESOURCE", "SINCE", "MESSAGE")
    lines = [header]
    for row in rows:
        resource = f"{row['resource_type']}/{row['resource_name']}"
        if row.get("namespace"):
            resource = f"{row['resource_type']}/{row['namespace']}/{row['resource_name']}"
        lines.append((row["severity"], row["cluster"], row["name"], resource, row["timestamp"], row["message"]))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + "  " + line[-1]
        for line in lines
    )
