"""``config check`` warns about a plaintext ingester, and whether push speaks TLS is one setting: the
ingester's ``tls_enabled`` (docs/push-mode.md#tls, docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from clusterpulse_cluster.agent_deploy.deployer import ingester_transport

from clusterpulse_core.cli import cli
from clusterpulse_core.config import ConfigError
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, start_plugins, stop_plugins

INGESTER = "plugins.ingester.tls_enabled: false: the ingester (and the agent, to it) speaks plaintext"
AGENTS = "plugins.cluster.ingester_tls_enabled: false: deployed agents push to the ingester in plaintext"
MISMATCH = "plugins.cluster.ingester_tls_enabled = true disagrees with plugins.ingester.tls_enabled = false"
PLUGINS = '[clusterpulse]\nplugins = ["redis", "cluster", "ingester"]\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "clusterpulse.toml"
    path.write_text(text)
    return path


def check(tmp_path: Path, text: str) -> list[str]:
    result = CliRunner().invoke(cli, ["--config", str(write(tmp_path, text)), "config", "check"])
    assert result.exit_code == 0, result.output
    return [line for line in result.output.splitlines() if line.startswith("warning:")]


@pytest.fixture(autouse=True)
def no_tls_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INGESTER_TLS_ENABLED", raising=False)


def test_plaintext_is_warned_about_once_where_it_is_set(tmp_path: Path) -> None:
    warnings = check(tmp_path, PLUGINS + "[plugins.ingester]\ntls_enabled = false\n")
    (plaintext,) = [line for line in warnings if "tls_enabled" in line]
    assert INGESTER in plaintext
    # Without the ingester plugin the cluster plugin's own key decides, and is warned about.
    warnings = check(
        tmp_path, '[clusterpulse]\nplugins = ["redis", "cluster"]\n[plugins.cluster]\ningester_tls_enabled = false\n'
    )
    assert any(AGENTS in line for line in warnings), warnings


def test_the_tls_default_is_not_warned_about(tmp_path: Path) -> None:
    warnings = check(tmp_path, PLUGINS)
    assert not any("tls_enabled" in line for line in warnings), warnings


def test_the_ingester_decides_what_deployed_agents_get(tmp_path: Path, redis_url: str) -> None:
    """One source of truth: the cluster plugin asks the ingester (``clusterpulse_ingester_transport``)."""
    for value in (False, True):
        config, host = load(
            str(
                write(
                    tmp_path,
                    PLUGINS + f'[plugins.redis]\nurl = "{redis_url}"\n[plugins.ingester]\n'
                    f"tls_enabled = {str(value).lower()}\nrequire_client_certificates = {str(value).lower()}\n",
                )
            ),
            env={},
        )
        transport = ingester_transport(host, config.plugin("cluster"))
        assert (transport.tls_enabled, transport.client_certificates) == (value, value)


def test_both_keys_set_differently_is_an_error_naming_both(
    tmp_path: Path, redis_url: str, kube_api: Callable[..., Any]
) -> None:
    """``config check`` reports it and ``run`` refuses to start: one validation path (``clusterpulse_check_config``)."""
    text = (
        PLUGINS + f'[plugins.redis]\nurl = "{redis_url}"\n'
        "[plugins.ingester]\nenabled = false\ntls_enabled = false\n[plugins.cluster]\ningester_tls_enabled = true\n"
    )
    path = write(tmp_path, text)
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "check"])
    assert result.exit_code == 1, result.output
    (error,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert error.startswith(f"error: {path}: {MISMATCH}"), error
    with pytest.raises(ConfigError) as info:
        load(str(path), env={})
    (error,) = info.value.errors
    assert error.startswith(MISMATCH), error
    # The same value in both is fine (and what INGESTER_TLS_ENABLED, which sets both, gives).
    hub = KubeClient(kube_api().api_client())
    config, host = load(str(write(tmp_path, text.replace("= true", "= false"))), env={})
    runtime = build_runtime(config, host, hub=hub)
    start_plugins(runtime)
    stop_plugins(runtime)
