"""``config check`` warns about a plaintext ingester: the opt-out of push TLS, on the hub's ingester
and on what the cluster plugin tells the agents it deploys (docs/push-mode.md#tls)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from clusterpulse_core.cli import cli

INGESTER = "plugins.ingester.tls_enabled: false: the ingester (and the agent, to it) speaks plaintext"
AGENTS = "plugins.cluster.ingester_tls_enabled: false: deployed agents push to the ingester in plaintext"


def check(tmp_path: Path, sections: str) -> list[str]:
    path = tmp_path / "clusterpulse.toml"
    path.write_text('[clusterpulse]\nplugins = ["redis", "cluster", "ingester"]\n' + sections)
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "check"])
    assert result.exit_code == 0, result.output
    return [line for line in result.output.splitlines() if line.startswith("warning:")]


@pytest.fixture(autouse=True)
def no_tls_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INGESTER_TLS_ENABLED", raising=False)


def test_plaintext_on_either_side_is_warned_about(tmp_path: Path) -> None:
    warnings = check(
        tmp_path, "[plugins.ingester]\ntls_enabled = false\n[plugins.cluster]\ningester_tls_enabled = false\n"
    )
    assert any(INGESTER in line for line in warnings), warnings
    assert any(AGENTS in line for line in warnings), warnings


def test_the_tls_default_is_not_warned_about(tmp_path: Path) -> None:
    warnings = check(tmp_path, "")
    assert not any("tls_enabled" in line for line in warnings), warnings
