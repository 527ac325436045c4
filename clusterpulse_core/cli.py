"""The ``clusterpulse`` command line; plugins add subcommands through ``clusterpulse_add_commands``.

Conventions (:mod:`clusterpulse_core.cliutils`): ``--config FILE`` is accepted before or after
any subcommand; errors are ``error: ...`` lines on stderr with exit status 1; ``-`` is standard
input wherever a file is read. A plugin that fails to load never hides the other commands:
the failure is printed once, as a warning, and ``clusterpulse plugins`` shows it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import click

from clusterpulse_core.cliutils import fail, input_name, warn
from clusterpulse_core.config import Config, ConfigError, masked
from clusterpulse_core.plugins import PluginError, PluginHost, command_providers, installed_plugins

#: Core commands that report plugin and config problems themselves (no start-up warning).
SELF_REPORTING = frozenset({"plugins", "config", "run", "crds"})


class _State:
    """What the CLI learned while starting: the config file and, once loaded, the plugins."""

    def __init__(self) -> None:
        self.config_file: str | None = None
        self.host: PluginHost | None = None
        self.config: Config | None = None


def _load(config_file: str | None, flags: Mapping[str, tuple[str, Any]] | None = None) -> tuple[Config, PluginHost]:
    from clusterpulse_core.runtime.bootstrap import load

    return load(config_file, flags=flags)


def _fail(message: str) -> NoReturn:
    """``error: <message>`` on stderr, exit status 1 (kept for commands written before :func:`fail`)."""
    fail(message)


@click.group()
@click.option(
    "--config",
    "config_file",
    envvar="CLUSTERPULSE_CONFIG",
    default=None,
    help="config file (default ./clusterpulse.toml; '-' = stdin); also accepted after the subcommand",
)
@click.option(
    "--debug",
    is_flag=True,
    help="show the traceback of a failure (as LOG_LEVEL=debug does); also accepted after the subcommand",
)
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, debug: bool) -> None:
    """ClusterPulse: multi-cluster monitoring controller."""
    state = ctx.ensure_object(_State)
    state.config_file = config_file


def _loaded(ctx: click.Context, flags: Mapping[str, tuple[str, Any]] | None = None) -> tuple[Config, PluginHost]:
    """The fully loaded configuration and plugins; any problem is fatal (what ``run`` needs)."""
    state = ctx.ensure_object(_State)
    if state.host is None or state.config is None:
        try:
            state.config, state.host = _load(state.config_file, flags)
        except (ConfigError, PluginError) as exc:
            fail(str(exc))
    assert state.config is not None and state.host is not None
    return state.config, state.host


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def plugins_cmd(ctx: click.Context, as_json: bool) -> None:
    """List installed plugins: enabled, loaded, their hooks and contributions, and why any failed.

    Always answers, even when the configuration or a plugin is broken (exit status 1 then).
    Without a ``plugins`` list in the config, the project's installed plugins are enabled and
    the missing ones are listed as skipped.
    """
    from clusterpulse_core.runtime.bootstrap import diagnose

    state = ctx.ensure_object(_State)
    found = diagnose(state.config_file)
    host, plan = found.host, found.plan
    contributed: dict[str, dict[str, list[str]]] = {}
    try:
        for kind in ("functions", "aggregations", "field_types", "filter_operators", "alert_rules"):
            for name, contribution in sorted(host.contributions.table(kind).items()):
                contributed.setdefault(contribution.plugin, {}).setdefault(kind, []).append(name)
    except PluginError:
        pass  # already among the problems
    installed = {plugin.name: plugin for plugin in installed_plugins()}
    rows: list[dict[str, Any]] = []
    for name in sorted(set(installed) | set(plan.names)):
        plugin = installed.get(name)
        loaded = name in host.order
        rows.append(
            {
                "name": name,
                "distribution": plugin.distribution if plugin else None,
                "version": plugin.version if plugin else None,
                "enabled": name in plan.names,
                "loaded": loaded,
                "hooks": host.hooks_of(name) if loaded else [],
                "contributes": contributed.get(name, {}),
                "error": host.failures.get(name),
            }
        )
    plugin_errors = set(host.failures.values())
    others = [problem for problem in found.problems if problem not in plugin_errors]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "plugins": rows,
                    "skipped": [{"name": name, "reason": reason} for name, reason in plan.skipped],
                    "defaults": not plan.explicit,
                    "problems": list(found.problems),
                    "error": found.problems[0] if found.problems else None,
                    "warnings": list(found.warnings),
                },
                indent=2,
            )
        )
    else:
        width = max((len(row["name"]) for row in rows), default=0)
        for row in rows:
            state_text = "enabled" if row["enabled"] else "disabled"
            if row["loaded"]:
                state_text += ", loaded"
            elif row["error"]:
                state_text += ", BROKEN"
            origin = f"{row['distribution']} {row['version']}" if row["distribution"] else "not installed"
            click.echo(f"{row['name']:<{width}}  {origin} ({state_text})")
            if row["error"]:
                click.echo(f"    error: {row['error']}")
            for hook in row["hooks"]:
                click.echo(f"    {hook}")
            for kind, names in row["contributes"].items():
                click.echo(f"    {kind.replace('_', ' ')}: {', '.join(names)}")
        if not plan.explicit:
            click.echo("(no plugins list configured: the project's installed plugins are enabled)")
        for name, reason in plan.skipped:
            click.echo(f"skipped {name}: {reason}")
        for problem in others:
            click.echo(f"error: {problem}", err=True)
        warn("\n".join(found.warnings))
    if found.problems:
        sys.exit(1)


@cli.group("config")
def config_group() -> None:
    """Validate and show configuration."""


@config_group.command("check")
@click.argument("file", required=False, default=None)
@click.pass_context
def config_check(ctx: click.Context, file: str | None) -> None:
    """Validate FILE ('-' = stdin; default: --config or ./clusterpulse.toml) as ``run`` would.

    Every key known, every value of the right type and usable (addresses, levels), plugins
    installed and importable, plugin settings accepted, no name or kind registered twice.
    Reports every problem in one run, one ``error:`` line each.
    """
    from clusterpulse_core.config import config_path
    from clusterpulse_core.runtime.bootstrap import diagnose

    chosen = file if file is not None else ctx.ensure_object(_State).config_file
    path = config_path(chosen)
    shown = input_name(path) if path is not None else "(no config file: defaults)"
    found = diagnose(str(path) if path is not None else None)
    warn("\n".join(f"{shown}: {warning}" for warning in found.warnings))
    if found.problems:
        fail(
            "\n".join(
                problem if problem.startswith(f"{shown}: ") else f"{shown}: {problem}" for problem in found.problems
            )
        )
    click.echo(f"{shown}: ok")


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


@cli.command("rbac")
@click.option(
    "--managed",
    is_flag=True,
    help="print the managed-cluster side instead: read-only ClusterRole, ServiceAccount, token Secret",
)
@click.option(
    "--cross-namespace", is_flag=True, help="print the opt-in ClusterRole for Secrets referenced in other namespaces"
)
@click.option(
    "--read",
    "reads",
    multiple=True,
    metavar="GROUP/RESOURCE",
    help="with --managed: also allow get/list on this resource (a MetricSource's source); repeatable",
)
@click.option(
    "--push",
    is_flag=True,
    help="with --managed: the cluster is push mode, the hub also installs the collector agent there",
)
@click.option("--service-account", default="", help="name of the ServiceAccount (default per side)")
@click.option(
    "--namespace", default="", help="with --managed: the ServiceAccount's namespace there (default clusterpulse-reader)"
)
@click.pass_context
def rbac_cmd(
    ctx: click.Context,
    managed: bool,
    cross_namespace: bool,
    reads: tuple[str, ...],
    push: bool,
    service_account: str,
    namespace: str,
) -> None:
    """Print the least-privilege RBAC of the enabled kinds (YAML): hub Role, or --managed / --cross-namespace."""
    from clusterpulse_core import rbac

    if not managed:
        wrong = [
            f"{option} needs --managed (it is about the managed-cluster side)"
            for option, given in (("--read", reads), ("--push", push))
            if given
        ]
        if wrong:
            _fail("\n".join(wrong))
    config, host = _loaded(ctx)
    kinds = [kind for _owner, kind in host.kinds.values()]
    plugins = ", ".join(host.order)
    if managed:
        problems = []
        extra = []
        for text in reads:
            try:
                extra.append(rbac.parse_read(text, kinds))
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            _fail("\n".join(problems))
        try:
            docs = rbac.managed_manifests(
                kinds,
                extra,
                name=service_account or rbac.READER,
                namespace=namespace or rbac.READER_NAMESPACE,
                push=push,
            )
        except ValueError as exc:
            _fail(str(exc))
        header = f"Generated by: clusterpulse rbac --managed{' --push' if push else ''} (plugins {plugins})."
    elif cross_namespace:
        docs = rbac.cross_namespace_manifests(kinds, config.core, service_account or rbac.CONTROLLER)
        header = f"Generated by: clusterpulse rbac --cross-namespace (plugins {plugins})."
    else:
        docs = rbac.hub_manifests(kinds, config.core, service_account or rbac.CONTROLLER)
        header = f"Generated by: clusterpulse rbac (plugins {plugins}; namespace {config.core.namespace})."
    click.echo(rbac.manifests_yaml(docs, header + " Do not edit."), nl=False)


#: Go's ``strconv.ParseBool``: what ``--leader-elect=VALUE`` accepts.
GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


@cli.command("run")
@click.option("--once", is_flag=True, help="reconcile every object once, then exit (0 = all succeeded)")
@click.option(
    "--metrics-bind-address",
    "-metrics-bind-address",
    "metrics_bind_address",
    default=None,
    metavar="ADDR",
    help="/metrics listen address ('0' disables); overrides the config (Go manager flag)",
)
@click.option(
    "--health-probe-bind-address",
    "-health-probe-bind-address",
    "health_probe_bind_address",
    default=None,
    metavar="ADDR",
    help="/healthz and /readyz listen address ('0' disables); overrides the config (Go manager flag)",
)
@click.option(
    "--namespace",
    "-namespace",
    "namespace",
    default=None,
    metavar="NAME",
    help="watch namespace; empty = NAMESPACE or the config (Go manager flag)",
)
@click.option(
    "--leader-elect",
    "-leader-elect",
    "leader_elect",
    is_flag=False,
    flag_value="true",
    default=None,
    metavar="[=BOOL]",
    help="run leader election; --leader-elect=false turns it off (Go manager flag)",
)
@click.option(
    "--kubeconfig",
    "-kubeconfig",
    "kubeconfig",
    default=None,
    metavar="FILE",
    help="hub kubeconfig; overrides KUBECONFIG and the config (controller-runtime flag)",
)
@click.pass_context
def run_cmd(
    ctx: click.Context,
    once: bool,
    metrics_bind_address: str | None,
    health_probe_bind_address: str | None,
    namespace: str | None,
    leader_elect: str | None,
    kubeconfig: str | None,
) -> None:
    """Run the manager (watch, reconcile, store) until SIGTERM/SIGINT.

    Accepts the Go manager's flags with their meanings, so a Deployment written for the Go
    image runs unchanged: they override the config file and the environment.
    """
    from clusterpulse_core.logs import configure_logging
    from clusterpulse_core.runtime.bootstrap import HubError, build_runtime, reconcile_once, start_plugins, stop_plugins

    flags: dict[str, tuple[str, Any]] = {}
    for name, flag, value in (
        ("metrics_bind_address", "--metrics-bind-address", metrics_bind_address),
        ("health_probe_bind_address", "--health-probe-bind-address", health_probe_bind_address),
        ("namespace", "--namespace", namespace or None),
        ("kubeconfig", "--kubeconfig", kubeconfig or None),
    ):
        if value is not None:
            flags[name] = (flag, value)
    if leader_elect is not None:
        if leader_elect not in GO_BOOLS:
            _fail(f"--leader-elect: expected true or false, got {leader_elect!r}")
        flags["leader_elect"] = ("--leader-elect", GO_BOOLS[leader_elect])
    config, host = _loaded(ctx, flags)
    configure_logging(config.core.log_level)
    try:
        runtime = build_runtime(config, host)
    except Exception as exc:
        fail(str(exc))
    if once:
        try:
            start_plugins(runtime)
        except PluginError as exc:
            fail(str(exc))
        try:
            outcomes = reconcile_once(runtime)
        except HubError as exc:
            fail(str(exc))
        finally:
            stop_plugins(runtime)
        failed = [o for o in outcomes if not o.ok]
        click.echo(f"reconciled {len(outcomes)} objects: {len(outcomes) - len(failed)} ok, {len(failed)} failed")
        for outcome in failed:
            click.echo(f"  {outcome.ref}: {outcome.detail}")
        sys.exit(1 if failed else 0)
    from clusterpulse_core.runtime.manager import Manager

    sys.exit(Manager(runtime).run())


def _plugin_commands(group: click.Group, config_file: str | None) -> tuple[str, ...]:
    """Let every command provider and every plugin that loads add its subcommands.

    Returns the problems met while loading. Command providers (entry-point group
    ``clusterpulse.commands``: the tools of an installed distribution, such as ``demo`` or
    ``testing kube-api``) add theirs whatever the config enables; plugins add theirs when enabled.
    """
    from clusterpulse_core.runtime.bootstrap import diagnose

    found = diagnose(config_file)
    problems = [*found.problems, *found.warnings]
    tools = command_providers()
    problems += tools.failures.values()
    for hook, what in (
        (tools.pm.hook.clusterpulse_add_commands, "command provider"),
        (found.host.pm.hook.clusterpulse_add_commands, "plugin"),
    ):
        try:
            hook(cli=group, plugins=found.host)
        except Exception as exc:
            problems.append(f"adding {what} commands failed: {type(exc).__name__}: {exc}")
    return tuple(problems)


def loaded(ctx: click.Context) -> tuple[Config, PluginHost]:
    """The configuration and plugins of this invocation, fully loaded; any problem is an ``error:`` exit.

    For a command (a plugin's or a command provider's) that needs the enabled plugins, such as
    the kinds they declare.
    """
    return _loaded(ctx)


def config_file(ctx: click.Context) -> str | None:
    """The ``--config`` file given to this invocation (``None``: the default lookup)."""
    return ctx.ensure_object(_State).config_file


def hoist_config(argv: Sequence[str]) -> list[str]:
    """``argv`` with every ``--config FILE`` / ``--config=FILE`` and ``--debug`` moved in front.

    So ``clusterpulse run --once --config x.toml`` works like ``clusterpulse --config x.toml
    run --once``. Arguments after ``--`` are left alone; the last ``--config`` wins.
    """
    front: list[str] = []
    debug: list[str] = []
    rest: list[str] = []
    index = 0
    args = list(argv)
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest += args[index:]
            break
        if arg == "--config" and index + 1 < len(args):
            front = ["--config", args[index + 1]]
            index += 2
            continue
        if arg.startswith("--config="):
            front = ["--config", arg.split("=", 1)[1]]
        elif arg == "--debug":
            debug = ["--debug"]
        else:
            rest.append(arg)
        index += 1
    return front + debug + rest


def _subcommand(args: Sequence[str]) -> str | None:
    index = 0
    while index < len(args):
        if args[index] == "--config":
            index += 2
            continue
        if not args[index].startswith("-"):
            return args[index]
        index += 1
    return None


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``clusterpulse`` command.

    Every failure ends as ``error:`` lines and a non-zero exit status; an unexpected exception
    shows its traceback only with ``--debug`` or ``LOG_LEVEL=debug``.
    """
    args = hoist_config(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args[:3] or os.environ.get("LOG_LEVEL", "").strip().lower() in ("debug", "trace")
    try:
        _main(args)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:
        if debug:
            raise
        fail(f"{describe(exc)} (--debug shows the traceback)")


def describe(exc: BaseException) -> str:
    """One line for an unexpected exception: its type and first line of its message."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message.splitlines()[0]}" if message else type(exc).__name__


def _main(args: list[str]) -> None:
    config_file = args[1] if args[:1] == ["--config"] else None
    problems = _plugin_commands(cli, config_file)
    if problems and _subcommand(args) not in SELF_REPORTING:
        warn("\n".join(problems))
    try:
        cli.main(args=args, prog_name="clusterpulse", standalone_mode=False)
    except click.UsageError as exc:
        if exc.ctx is not None:
            click.echo(exc.ctx.get_usage(), err=True)
            click.echo(f"Try '{exc.ctx.command_path} --help' for help.", err=True)
        fail(exc.format_message(), exc.exit_code)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except click.exceptions.Abort:
        fail("aborted")
