"""The clusterpulse command line, run as a real subprocess against real configs and the emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from clusterpulse_testing.kube_api import KubeAPI

CLI = [sys.executable, "-c", "from clusterpulse_core.cli import main; main()"]


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("CLUSTERPULSE_CONFIG", "NAMESPACE")}
    full_env.update(env or {})
    return subprocess.run(CLI + args, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "clusterpulse.toml").write_text(
        '[clusterpulse]\nplugins = ["example"]\n\n[plugins.example]\ngreeting = "hi"\ntoken = "s3cret"\n'
    )
    return tmp_path


def test_plugins_json_lists_installed_enabled_loaded(workdir: Path) -> None:
    result = run(["plugins", "--json"], workdir)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["plugins"]}
    assert rows["example"]["enabled"] and rows["example"]["loaded"]
    assert rows["example"]["distribution"] == "clusterpulse-example"
    assert "clusterpulse_reconcile" in rows["example"]["hooks"]
    assert rows["example"]["contributes"] == {"functions": ["shout"]}
    assert not rows["example-broken"]["enabled"] and not rows["example-broken"]["loaded"]


def test_plugins_text_lists_contributions(workdir: Path) -> None:
    result = run(["plugins"], workdir)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("example "))
    assert "(enabled, loaded)" in lines[start]
    assert "    functions: shout" in lines[start:]


def test_config_check_ok_and_bad(workdir: Path) -> None:
    assert run(["config", "check", "clusterpulse.toml"], workdir).stdout.strip() == "clusterpulse.toml: ok"
    (workdir / "bad.toml").write_text('[clusterpulse]\nplugins = ["example"]\n[plugins.example]\nrepeat = "x"\n')
    result = run(["config", "check", "bad.toml"], workdir)
    assert result.returncode == 1
    assert "plugins.example.repeat: expected int, got 'x'" in result.stderr


def test_config_check_names_missing_plugin(workdir: Path) -> None:
    (workdir / "missing.toml").write_text('[clusterpulse]\nplugins = ["nosuch"]\n')
    result = run(["config", "check", "missing.toml"], workdir)
    assert result.returncode == 1
    assert "plugin 'nosuch' is enabled but not installed (installed plugins: alerts, cluster, " in result.stderr


def test_config_show_masks_secrets_and_applies_env(workdir: Path) -> None:
    result = run(["config", "show"], workdir, env={"NAMESPACE": "elsewhere"})
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["clusterpulse"]["namespace"] == "elsewhere"
    assert shown["plugins"]["example"]["token"] == "********"
    assert "s3cret" not in result.stdout


def test_crds_generated_from_declared_kinds(workdir: Path) -> None:
    result = run(["crds"], workdir)
    assert result.returncode == 0, result.stderr
    (crd,) = list(yaml.safe_load_all(result.stdout))
    assert crd["metadata"]["name"] == "greetings.example.clusterpulse.io"
    assert crd["spec"]["names"]["shortNames"] == ["gr"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"][0]["jsonPath"] == ".status.phase"


def test_plugin_adds_a_command(workdir: Path) -> None:
    result = run(["example"], workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hi"


def _greeting(name: str, to: str | None) -> dict[str, Any]:
    spec = {"to": to} if to is not None else {}
    return {
        "apiVersion": "example.clusterpulse.io/v1",
        "kind": "Greeting",
        "metadata": {"name": name, "namespace": "clusterpulse"},
        "spec": spec,
    }


def test_run_once_reconciles_everything_and_reports(workdir: Path) -> None:
    with KubeAPI() as hub:
        hub.add_crd("example.clusterpulse.io", "v1", "Greeting", "greetings")
        hub.seed([_greeting("world", "world")])
        hub.write_kubeconfig(workdir / "kubeconfig")
        env = {"KUBECONFIG": str(workdir / "kubeconfig")}
        result = run(["run", "--once"], workdir, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "reconciled 1 objects: 1 ok, 0 failed" in result.stdout
        status = hub.get("example.clusterpulse.io/v1", "greetings", "world", "clusterpulse")["status"]
        assert status == {"phase": "Greeted", "message": "hi, world"}

        hub.seed([_greeting("nobody", None)])
        result = run(["run", "--once"], workdir, env=env)
        assert result.returncode == 1
        assert "1 ok, 1 failed" in result.stdout
        assert "Greeting clusterpulse/nobody: spec.to: required" in result.stdout


def test_testing_kube_api_serves_a_seeded_cluster(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n2}\n"
    )
    argv = [*CLI, "testing", "kube-api", "--objects", "objects", "--port", "0", "--kubeconfig", "kc.yaml"]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        names = [item["metadata"]["name"] for item in requests.get(f"{url}/api/v1/nodes", timeout=5).json()["items"]]
        assert names == ["n1", "n2"]
        kubeconfig = yaml.safe_load((tmp_path / "kc.yaml").read_text())
        assert kubeconfig["clusters"][0]["cluster"]["server"] == url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert proc.returncode is not None
