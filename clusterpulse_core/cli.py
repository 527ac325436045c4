"""The ``clusterpulse`` command line; plugins add subcommands through ``clusterpulse_add_commands``."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from clusterpulse_core.config import Config, ConfigError, config_path, masked, read_config
from clusterpulse_core.plugins import PluginError, PluginHost, installed_plugins


class _State:
    """What the CLI learned while starting: the loaded plugins, or why loading failed."""

    def __init__(self) -> None:
        self.config_file: str | None = None
        self.host: PluginHost | None = None
        self.config: Config | None = None
        self.error: str = ""


def _load(config_file: str | None) -> tuple[Config, PluginHost]:
    from clusterpulse_core.runtime.bootstrap import load

    return load(config_file)


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


@click.group()
@click.option("--config", "config_file", envvar="CLUSTERPULSE_CONFIG", default=None,
              help="config file (default ./clusterpulse.toml)")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None) -> None:
    """ClusterPulse: multi-cluster monitoring controller."""
    state = ctx.ensure_object(_State)
    state.config_file = config_file


def _loaded(ctx: click.Context) -> tuple[Config, PluginHost]:
    state = ctx.ensure_object(_State)
    if state.host is None or state.config is None:
        try:
            state.config, state.host = _load(state.config_file)
        except (ConfigError, PluginError) as exc:
            _fail(str(exc))
    assert state.config is not None and state.host is not None
    return state.config, state.host


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def plugins_cmd(ctx: click.Context, as_json: bool) -> None:
    """List installed plugins: enabled, loaded, and the hooks each implements."""
    state = ctx.ensure_object(_State)
    enabled: Sequence[str] = ()
    host: PluginHost | None = None
    problem = ""
    try:
        raw = read_config(config_path(state.config_file))
        enabled = raw.core.plugins
        host = PluginHost(enabled)
    except (ConfigError, PluginError) as exc:
        problem = str(exc)
    contributed: dict[str, dict[str, list[str]]] = {}
    if host is not None:
        try:
            for kind in ("functions", "aggregations", "field_types", "filter_operators", "alert_rules"):
                for name, contribution in sorted(host.contributions.table(kind).items()):
                    contributed.setdefault(contribution.plugin, {}).setdefault(kind, []).append(name)
        except PluginError as exc:
            problem = str(exc)
    rows: list[dict[str, Any]] = []
    for plugin in installed_plugins():
        loaded = host is not None and plugin.name in host.order
        rows.append({
            "name": plugin.name,
            "distribution": plugin.distribution,
            "version": plugin.version,
            "enabled": plugin.name in enabled,
            "loaded": loaded,
            "hooks": host.hooks_of(plugin.name) if loaded and host else [],
            "contributes": contributed.get(plugin.name, {}),
        })
    if as_json:
        click.echo(json.dumps({"plugins": rows, "error": problem or None}, indent=2))
    else:
        width = max((len(row["name"]) for row in rows), default=0)
        for row in rows:
            flags = ("enabled" if row["enabled"] else "disabled") + (", loaded" if row["loaded"] else "")
            click.echo(f"{row['name']:<{width}}  {row['distribution']} {row['version']} ({flags})")
            for hook in row["hooks"]:
                click.echo(f"    {hook}")
            for kind, names in row["contributes"].items():
                click.echo(f"    {kind.replace('_', ' ')}: {', '.join(names)}")
        if problem:
            click.echo(f"error: {problem}", err=True)
    if problem:
        sys.exit(1)


@cli.group("config")
def config_group() -> None:
    """Validate and show configuration."""


@config_group.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
def config_check(file: str) -> None:
    """Validate FILE: every key known, every value of the right type, plugins installed."""
    try:
        _load(file)
    except (ConfigError, PluginError) as exc:
        _fail(f"{file}: {exc}")
    click.echo(f"{file}: ok")


@config_group.command("show")
@click.pass_context
def config_show(ctx: click.Context) -> None:
    """Print the effective settings (file + environment), secrets masked."""
    config, _host = _loaded(ctx)
    shown: dict[str, Any] = {"clusterpulse": masked(config.core), "plugins": {}}
    for name, settings in config.plugins.items():
        shown["plugins"][name] = masked(settings) if settings is not None else {}
    click.echo(json.dumps(shown, indent=2, default=str))


@cli.command("crds")
@click.pass_context
def crds_cmd(ctx: click.Context) -> None:
    """Print the CRD manifests of the enabled kinds (YAML)."""
    from clusterpulse_core.crds import crds_yaml

    _config, host = _loaded(ctx)
    click.echo(crds_yaml([kind for _owner, kind in host.kinds.values()]), nl=False)


@cli.command("run")
@click.option("--once", is_flag=True, help="reconcile every object once, then exit (0 = all succeeded)")
@click.pass_context
def run_cmd(ctx: click.Context, once: bool) -> None:
    """Run the manager (watch, reconcile, store) until SIGTERM/SIGINT."""
    from clusterpulse_core.logs import configure_logging
    from clusterpulse_core.runtime.bootstrap import build_runtime, reconcile_once, start_plugins, stop_plugins

    config, host = _loaded(ctx)
    configure_logging(config.core.log_level)
    try:
        runtime = build_runtime(config, host)
    except Exception as exc:
        _fail(str(exc))
    if once:
        start_plugins(runtime)
        try:
            outcomes = reconcile_once(runtime)
        finally:
            stop_plugins(runtime)
        failed = [o for o in outcomes if not o.ok]
        click.echo(f"reconciled {len(outcomes)} objects: {len(outcomes) - len(failed)} ok, {len(failed)} failed")
        for outcome in failed:
            click.echo(f"  {outcome.ref}: {outcome.detail}")
        sys.exit(1 if failed else 0)
    from clusterpulse_core.runtime.manager import Manager

    sys.exit(Manager(runtime).run())


@cli.command("demo")
@click.option("--cycles", type=click.IntRange(min=1), default=3, show_default=True,
              help="reconcile cycles to run before printing the summary and exiting")
@click.option("--redis-url", default=None, help="use this Redis instead of starting a private redis-server")
def demo_cmd(cycles: int, redis_url: str | None) -> None:
    """Run the real manager and plugins on an emulated demo fleet, then summarise Redis."""
    try:
        from clusterpulse_core.demo.run import DemoError, run_demo
    except ImportError as exc:
        _fail(f"the demo needs the testing extra: pip install 'clusterpulse-core[testing]' ({exc})")
    from clusterpulse_core.logs import configure_logging

    configure_logging("warn")
    try:
        run_demo(cycles, redis_url, echo=click.echo)
    except (DemoError, PluginError, ConfigError) as exc:
        _fail(str(exc))


@cli.group("testing")
def testing_group() -> None:
    """Test tools for plugin authors."""


@testing_group.command("kube-api")
@click.option("--objects", "objects_dir", type=click.Path(file_okay=False), default=None,
              help="seed from every YAML/JSON file in this folder")
@click.option("--port", type=int, default=0, show_default=True, help="port on 127.0.0.1 (0 = free port)")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="write a kubeconfig here")
def kube_api_cmd(objects_dir: str | None, port: int, kubeconfig: str | None) -> None:
    """Serve one emulated Kubernetes API; prints its URL first, runs until stopped."""
    from clusterpulse_core.testing.kube_api import serve

    serve(objects_dir, port, kubeconfig)


def _plugin_commands(group: click.Group, config_file: str | None) -> None:
    """Let enabled plugins add subcommands; a broken config leaves the core commands usable."""
    try:
        _config, host = _load(config_file)
    except (ConfigError, PluginError):
        return
    host.pm.hook.clusterpulse_add_commands(cli=group, plugins=host)


def _config_from_argv(argv: Sequence[str]) -> str | None:
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``clusterpulse`` command."""
    args = list(sys.argv[1:] if argv is None else argv)
    config_file = _config_from_argv(args)
    if config_file is None:
        found = config_path(None)
        config_file = str(found) if found else None
    if config_file is None or Path(config_file).exists():
        _plugin_commands(cli, config_file)
    cli.main(args=args, prog_name="clusterpulse")
