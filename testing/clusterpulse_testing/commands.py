"""The test tools' commands, added through ``clusterpulse_add_commands`` when clusterpulse-testing is installed.

``clusterpulse testing kube-api`` (an emulated Kubernetes API to try plugins by hand) and
``clusterpulse plugin new`` (the plugin scaffold). Registered under the entry-point group
``clusterpulse.commands``, so a production install (core + plugins) has neither.
"""

from __future__ import annotations

from typing import Any

import click

from clusterpulse_core import hookimpl
from clusterpulse_core.cli import loaded
from clusterpulse_core.cliutils import fail
from clusterpulse_core.plugins import PluginHost

KUBE_API_HELP = """Serve one emulated Kubernetes API; prints its URL first, runs until stopped.

\b
--objects seeds it from every *.yaml, *.yml and *.json file under a folder
(recursively, sorted by path), or from standard input with '-'. A file holds
Kubernetes objects as a client would send them: one object, several YAML
documents separated by '---', or a List ({kind: List, items: [...]}). Each
object needs apiVersion, kind and metadata.name (metadata.namespace defaults
to 'default'); status is kept as given. CustomResourceDefinitions and
Namespaces are created first, then the rest in file order. Built-in kinds
(Namespace, Node, Pod, Secret, ConfigMap, Deployment...) are always served;
a custom kind needs its CRD among the objects, or --crds.

\b
--crds also creates the CRDs of the kinds the enabled plugins declare (what
'clusterpulse crds' prints), so their objects can be seeded without a CRD file.
"""


@click.group("testing")
def testing_group() -> None:
    """Test tools for plugin authors."""


@testing_group.command("kube-api", help=KUBE_API_HELP)
@click.option(
    "--objects",
    "objects_dir",
    default=None,
    metavar="DIR|-",
    help="seed from every YAML/JSON file in this folder ('-' = stdin)",
)
@click.option("--crds", "with_crds", is_flag=True, help="create the CRDs of the enabled plugins' kinds first")
@click.option("--port", type=int, default=0, show_default=True, help="port on 127.0.0.1 (0 = free port)")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help="write a kubeconfig here")
@click.pass_context
def kube_api_cmd(
    ctx: click.Context, objects_dir: str | None, with_crds: bool, port: int, kubeconfig: str | None
) -> None:
    from clusterpulse_testing.kube_api import SeedError, serve

    crds: list[dict[str, Any]] = []
    if with_crds:
        from clusterpulse_core.crds import crd_manifest

        _config, host = loaded(ctx)
        crds = [crd_manifest(kind) for _owner, kind in host.kinds.values()]
    try:
        serve(objects_dir, port, kubeconfig, crds=crds)
    except SeedError as exc:
        fail(str(exc))


@click.group("plugin")
def plugin_group() -> None:
    """Tools for writing plugins."""


@plugin_group.command("new")
@click.argument("name")
@click.option(
    "--directory",
    "-d",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="where to create the package folder",
)
def plugin_new(name: str, directory: str) -> None:
    """Write a working plugin package clusterpulse-NAME/: pyproject with the entry point, a hook, a test.

    It passes its own test right after installing: cd clusterpulse-NAME && pip install -e '.[test]' && pytest
    """
    from clusterpulse_testing.scaffold import ScaffoldError, create

    try:
        root = create(name, directory)
    except ScaffoldError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{directory}: {exc}")
    click.echo(f"created {root}/ (plugin {name!r}): cd {root} && pip install -e '.[test]' && pytest")


class TestingCommands:
    """Adds ``testing kube-api`` and ``plugin new`` to the ``clusterpulse`` command."""

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group, plugins: PluginHost) -> None:
        """Add the ``testing`` and ``plugin`` command groups."""
        cli.add_command(testing_group)
        cli.add_command(plugin_group)
