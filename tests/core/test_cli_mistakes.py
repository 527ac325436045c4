"""Every mistake gets one clear line: the CLI run as a user runs it (exit status and exact first line).

Real subprocesses, real plugins (the example plugins under ``tests/plugins``), the API emulator as
the hub, a closed loopback port as an unreachable hub or Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clusterpulse_core.testing.kube_api import KubeAPI
from clusterpulse_core.testing.servers import free_port

CLI = [sys.executable, "-c", "from clusterpulse_core.cli import main; main()"]
ENV_SET_BY_TESTS = ("CLUSTERPULSE_CONFIG", "NAMESPACE", "VM_ENABLED", "LOG_LEVEL", "KUBECONFIG")


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ENV_SET_BY_TESTS}
    full_env.update(env or {})
    return subprocess.run(CLI + args, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout,
                          input="")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def unreachable_kubeconfig(folder: Path) -> tuple[Path, str]:
    """A kubeconfig naming a loopback port nothing listens on."""
    url = f"https://127.0.0.1:{free_port()}"
    path = write(folder, "unreachable.kubeconfig", f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{url}", insecure-skip-tls-verify: true}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
users: [{{name: u, user: {{token: t}}}}]
""")
    return path, url


def test_run_once_against_an_unreachable_hub_is_one_error_line(tmp_path: Path) -> None:
    kubeconfig, url = unreachable_kubeconfig(tmp_path)
    write(tmp_path, "clusterpulse.toml", f'[clusterpulse]\nplugins = ["example"]\nkubeconfig = "{kubeconfig}"\n')
    result = run(["run", "--once"], tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"error: cannot reach the hub API at {url}: GET "
                               "/apis/example.clusterpulse.io/v1/namespaces/clusterpulse/greetings: "), lines
    assert [line for line in lines if line.startswith("error:")] == lines[:1]
    assert "Traceback" not in result.stderr


def test_an_unexpected_failure_shows_its_traceback_only_with_debug(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example", "example-raising"]\n')
    result = run(["example-raise"], tmp_path)
    assert (result.returncode, result.stderr) == (
        1, "error: RuntimeError: example-raise always fails (--debug shows the traceback)\n")
    for args, env in ((["example-raise", "--debug"], {}), (["--debug", "example-raise"], {}),
                      (["example-raise"], {"LOG_LEVEL": "debug"})):
        result = run(args, tmp_path, env=env)
        assert result.returncode == 1, args
        assert "Traceback (most recent call last)" in result.stderr, (args, env)
        assert result.stderr.splitlines()[-1] == "RuntimeError: example-raise always fails"


def test_demo_fails_fast_on_an_unreachable_redis(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    result = run(["demo", "--redis-url", url], tmp_path, timeout=60)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: --redis-url {url}: Redis does not answer: Error 111 connecting to {url[8:-2]}. Connection refused."]


def test_run_once_names_a_missing_crd_and_fails(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example"]\n')
    with KubeAPI() as hub:
        hub.write_kubeconfig(tmp_path / "kubeconfig")
        result = run(["run", "--once"], tmp_path, env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "error: kind Greeting is not served by the hub: its CRD greetings.example.clusterpulse.io is not "
        "installed (clusterpulse crds | kubectl apply -f -)")
