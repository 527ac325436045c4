"""``clusterpulse agent rotate-token`` / ``rotate-ca``: a grace that is not a number of seconds a date can
hold (NaN, infinite, negative, past ten years) is one error line naming it, before the hub is called.

Before, only a negative one was refused: ``--grace nan`` or ``1e12`` reached ``timedelta`` and ended in
``ValueError`` / ``OverflowError``, naming neither the option nor the setting.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from clusterpulse_ingester.agent.command import MAX_GRACE
from clusterpulse_testing.servers import free_port

CLI = [sys.executable, "-c", "from clusterpulse_core.cli import main; main()"]


def _config(folder: Path, ingester: str = "") -> Path:
    """The hub's config, its kubeconfig naming a loopback port nothing listens on (the hub is never reached)."""
    kubeconfig = folder / "hub.kubeconfig"
    kubeconfig.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{free_port()}", insecure-skip-tls-verify: true}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
users: [{{name: u, user: {{token: t}}}}]
"""
    )
    path = folder / "clusterpulse.toml"
    path.write_text(
        f'[clusterpulse]\nplugins = ["cluster", "ingester"]\nkubeconfig = "{kubeconfig}"\n'
        f"[plugins.ingester]\n{ingester}\n"
    )
    return path


def _run(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLUSTERPULSE_CONFIG", "KUBECONFIG", "NAMESPACE")}
    return subprocess.run(
        [*CLI, "--config", str(config), "agent", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("command", [["rotate-token", "lab"], ["rotate-ca"]])
@pytest.mark.parametrize("grace", ["nan", "inf", "-1", "1e12"])
def test_a_grace_no_date_can_hold_is_one_line_naming_the_option(tmp_path: Path, command: list[str], grace: str) -> None:
    result = _run(_config(tmp_path), *command, "--grace", grace)
    assert (result.returncode, result.stderr) == (
        1,
        f"error: --grace: must be a number of seconds from 0 to {MAX_GRACE} (ten years), got {float(grace):g}\n",
    )


def test_a_configured_grace_past_ten_years_names_the_setting(tmp_path: Path) -> None:
    result = _run(_config(tmp_path, "token_rotation_grace = 1e12"), "rotate-token", "lab")
    assert result.stderr == (
        "error: plugins.ingester.token_rotation_grace: must be a number of seconds from 0 to "
        f"{MAX_GRACE} (ten years), got 1e+12\n"
    )
