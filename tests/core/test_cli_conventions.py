"""Command-line conventions, each error with its exact message (real subprocesses, real plugins)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clusterpulse_model.defaults import DEFAULTS

from clusterpulse_core.plugins import installed_plugins

CLI = [sys.executable, "-c", "from clusterpulse_core.cli import main; main()"]
INSTALLED = ", ".join(plugin.name for plugin in installed_plugins())
BROKEN_IMPORT = (
    "plugin 'example-broken' (clusterpulse_example.broken) failed to import: ModuleNotFoundError: "
    "No module named 'clusterpulse_example_dependency_that_does_not_exist'"
)


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {
        k: v for k, v in os.environ.items() if k not in ("CLUSTERPULSE_CONFIG", "NAMESPACE", "VM_ENABLED", "LOG_LEVEL")
    }
    full_env.update(env or {})
    return subprocess.run(
        CLI + args,
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin if stdin is not None else "",
    )


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_config_is_accepted_after_the_subcommand(tmp_path: Path) -> None:
    write(tmp_path, "x.toml", '[clusterpulse]\nplugins = ["example"]\nnamespace = "after"\n')
    result = run(["config", "show", "--config", "x.toml"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["clusterpulse"]["namespace"] == "after"
    write(tmp_path, "bad.toml", '[clusterpulse]\nplugins = ["example"]\nlog_level = "verbose"\n')
    result = run(["run", "--once", "--config=bad.toml"], tmp_path)
    assert (result.returncode, result.stderr) == (
        1,
        "error: clusterpulse.log_level: expected one of debug, trace, info, warn, warning, error, got 'verbose'\n",
    )


def test_config_check_reports_every_error_in_one_run(tmp_path: Path) -> None:
    write(
        tmp_path,
        "bad.toml",
        '[clusterpulse]\nplugins = ["redis", "example-broken", "nosuch"]\n'
        'log_level = "verbose"\nmetrics_bind_address = "8080"\n\n'
        '[plugins.redis]\nport = "x"\ncache_ttl = 10\n',
    )
    result = run(["config", "check", "bad.toml"], tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: bad.toml: clusterpulse.log_level: expected one of debug, trace, info, warn, warning, error, "
        "got 'verbose'",
        "error: bad.toml: clusterpulse.metrics_bind_address: bind address must look like ':8080' or 'HOST:PORT', "
        "got '8080'",
        f"error: bad.toml: {BROKEN_IMPORT}",
        f"error: bad.toml: plugin 'nosuch' is enabled but not installed (installed plugins: {INSTALLED})",
        "error: bad.toml: plugins.redis.port: expected int, got 'x'",
        "error: bad.toml: plugins.redis.cache_ttl: expected a value >= 60, got 10",
    ]


def test_config_check_reads_stdin(tmp_path: Path) -> None:
    result = run(["config", "check", "-"], tmp_path, stdin='[clusterpulse]\nplugins = ["example"]\n')
    assert (result.returncode, result.stdout, result.stderr) == (0, "<stdin>: ok\n", "")
    result = run(["config", "check", "-"], tmp_path, stdin='[clusterpulse]\nplugins = "example"\n')
    assert (result.returncode, result.stderr) == (
        1,
        "error: <stdin>: clusterpulse.plugins: expected list of str, got 'example'\n",
    )


def test_a_broken_plugin_hides_no_command_and_is_reported_once(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example-broken", "metricsource"]\n')
    result = run(["expr", "1 + 1"], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "2.0\n", f"warning: {BROKEN_IMPORT}\n")

    result = run(["plugins", "--json"], tmp_path)
    assert result.returncode == 1
    shown = json.loads(result.stdout)
    rows = {row["name"]: row for row in shown["plugins"]}
    assert rows["example-broken"]["error"] == BROKEN_IMPORT and not rows["example-broken"]["loaded"]
    assert rows["metricsource"]["loaded"] and rows["metricsource"]["error"] is None
    assert shown["problems"] == [BROKEN_IMPORT]


def test_plugins_without_a_list_names_what_is_enabled_and_skipped(tmp_path: Path) -> None:
    result = run(["plugins"], tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "(no plugins list configured: the project's installed plugins are enabled)" in lines
    for name in DEFAULTS.plugins:
        enabled = any(line.startswith(f"{name} ") and "(enabled, loaded)" in line for line in lines)
        skipped = f"skipped {name}: not installed (pip install clusterpulse-{name})" in lines
        assert enabled != skipped, name
    assert any(line.startswith("example ") and "(disabled)" in line for line in lines)  # third-party: by name only


def test_an_upstream_variable_enables_its_installed_plugin(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["redis"]\n')
    result = run(["plugins", "--json"], tmp_path, env={"VM_ENABLED": "true"})
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["plugins"]}
    assert rows["vmwriter"]["enabled"] and rows["vmwriter"]["loaded"]


def test_metricsource_eval_reads_objects_from_stdin(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["metricsource"]\n')
    write(
        tmp_path,
        "ms.yaml",
        "apiVersion: clusterpulse.io/v1alpha1\nkind: MetricSource\n"
        "metadata: {name: m, namespace: x}\nspec:\n  source: {apiVersion: v1, kind: Pod}\n"
        "  fields:\n    - {name: n, path: .metadata.name}\n",
    )
    pods = json.dumps(
        {
            "kind": "List",
            "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}],
        }
    )
    result = run(["metricsource", "eval", "-f", "ms.yaml", "--objects", "-"], tmp_path, stdin=pods)
    assert result.returncode == 0, result.stderr
    assert [r["values"] for r in json.loads(result.stdout)["resources"]] == [{"n": "p"}]
    result = run(["metricsource", "eval", "-f", "-", "--objects", "-"], tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == "error: -f and --objects cannot both be '-' (standard input)"
    result = run(["metricsource", "eval", "-f", "nosuch.yaml", "--objects", "-"], tmp_path)
    assert (result.returncode, result.stderr) == (1, "error: nosuch.yaml: no such file\n")


def test_usage_errors_share_the_error_style(tmp_path: Path) -> None:
    result = run(["plugins", "--bogus"], tmp_path)
    assert result.returncode == 2
    usage, hint, error = result.stderr.splitlines()
    assert (usage, hint) == ("Usage: clusterpulse plugins [OPTIONS]", "Try 'clusterpulse plugins --help' for help.")
    # click words it "No such option: --bogus" or "No such option '--bogus'." depending on its version
    assert error.startswith("error: No such option") and "--bogus" in error


def test_kube_api_names_a_kind_without_crd_and_the_fix(tmp_path: Path) -> None:
    audit = "apiVersion: audit.example.com/v1\nkind: ConfigAudit\nmetadata: {name: a, namespace: default}\n"
    (tmp_path / "objects").mkdir()
    write(tmp_path / "objects", "audit.yaml", audit)
    result = run(["testing", "kube-api", "--objects", "objects"], tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"error: {Path('objects') / 'audit.yaml'}: kind ConfigAudit (audit.example.com/v1) has no "
        "CustomResourceDefinition: add the CRD to the objects, or pass --crds to create the CRDs of the enabled "
        "plugins' kinds\n"
    )


@pytest.mark.parametrize("needle", ["--crds", "kind: List", "metadata.name", "standard input with '-'"])
def test_kube_api_help_documents_the_objects_and_crds(tmp_path: Path, needle: str, kube_api_help: str) -> None:
    assert needle in kube_api_help


@pytest.fixture(scope="module")
def kube_api_help(tmp_path_factory: pytest.TempPathFactory) -> str:
    result = run(["testing", "kube-api", "--help"], tmp_path_factory.mktemp("help"))
    assert result.returncode == 0, result.stderr
    return " ".join(result.stdout.split())
