"""The config loader: TOML file + upstream environment variables, validated with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterpulse_core.config import SECRET_MASK, ConfigError, config_path, finish_config, masked, read_config
from clusterpulse_core.runtime.bootstrap import load


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "clusterpulse.toml"
    path.write_text(text)
    return path


GOOD = """
[clusterpulse]
plugins = ["example"]
namespace = "monitoring"
queue_qps = 5

[plugins.example]
greeting = "hi"
repeat = 3
token = "s3cret"
"""


def test_good_file(tmp_path: Path) -> None:
    config, host = load(str(write(tmp_path, GOOD)), env={})
    assert config.core.namespace == "monitoring"
    assert config.core.queue_qps == 5.0
    assert config.core.plugins == ("example",)
    settings = config.plugin("example")
    assert (settings.greeting, settings.repeat, settings.token) == ("hi", 3, "s3cret")
    assert host.plugin("example").settings is settings  # type: ignore[attr-defined]


def test_defaults_without_file() -> None:
    raw = read_config(None, env={})
    assert raw.core.namespace == "clusterpulse"
    assert raw.core.plugins is None  # not configured: the project's installed plugins (plan_plugins)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[clusterpulse]\nlog_level = "verbose"\nmetrics_bind_address = "8080"\nqueue_burst = 0\nnamespce = "x"\n',
    )
    with pytest.raises(ConfigError) as caught:
        read_config(path, env={})
    assert caught.value.errors == [
        "clusterpulse.namespce: unknown key (did you mean 'namespace'? expected one of: plugins, namespace, "
        "log_level, kubeconfig, "
        "leader_elect, lease_duration, renew_deadline, retry_period, sharding, shard_handover_delay, shard_dead_after, "
        "metrics_bind_address, health_probe_bind_address, probe_request_timeout, probe_max_connections, "
        "resync_period, watch_timeout, watch_silence_limit, "
        "queue_base_delay, queue_max_delay, queue_qps, queue_burst, shutdown_grace, ghost_sweep_interval, "
        "request_timeout, "
        "max_response_bytes, reconcile_timeout, event_interval, cluster_max_in_flight, client_max_idle, "
        "endpoint_allow_list, require_secret_label, workers)",
        "clusterpulse.log_level: expected one of debug, trace, info, warn, warning, error, got 'verbose'",
        "clusterpulse.metrics_bind_address: bind address must look like ':8080' or 'HOST:PORT', got '8080'",
        "clusterpulse.queue_burst: expected a value >= 1, got 0",
    ]


def test_log_level_from_the_environment_keeps_the_upstream_rule(tmp_path: Path) -> None:
    raw = read_config(None, env={"LOG_LEVEL": "verbose"})
    assert raw.core.log_level == "verbose"  # upstream: any other value means info


def test_unknown_key_names_the_path(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("repeat = 3", "repeet = 3"))
    expected = (
        r"^plugins\.example\.repeet: unknown key \(did you mean 'repeat'\? "
        r"expected one of: greeting, repeat, token\)"
    )
    with pytest.raises(ConfigError, match=expected):
        load(str(path), env={})


def test_unknown_core_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^clusterpulse\.namespce: unknown key"):
        read_config(write(tmp_path, '[clusterpulse]\nnamespce = "x"\n'), env={})


def test_wrong_type_names_path_value_and_expectation(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("repeat = 3", 'repeat = "three"'))
    with pytest.raises(ConfigError, match=r"^plugins\.example\.repeat: expected int, got 'three'$"):
        load(str(path), env={})


def test_below_minimum_in_file(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("repeat = 3", "repeat = 0"))
    with pytest.raises(ConfigError, match=r"plugins\.example\.repeat: expected a value >= 1, got 0"):
        load(str(path), env={})


def test_list_item_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"clusterpulse\.plugins\[1\]: expected string, got 3"):
        read_config(write(tmp_path, '[clusterpulse]\nplugins = ["a", 3]\n'), env={})


def test_section_for_disabled_plugin(tmp_path: Path) -> None:
    raw = read_config(write(tmp_path, "[clusterpulse]\nplugins = []\n[plugins.example]\nrepeat = 2\n"), env={})
    with pytest.raises(ConfigError, match=r"plugins\.example: section for a plugin that is not enabled"):
        finish_config(raw, {}, env={})


def test_invalid_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not valid TOML"):
        read_config(write(tmp_path, "[clusterpulse\n"), env={})


def test_env_overrides_file(tmp_path: Path) -> None:
    env = {"NAMESPACE": "from-env", "EXAMPLE_GREETING": "hey"}
    config, _ = load(str(write(tmp_path, GOOD)), env=env)
    assert config.core.namespace == "from-env"
    assert config.plugin("example").greeting == "hey"


def test_empty_env_value_keeps_file_value(tmp_path: Path) -> None:
    config, _ = load(str(write(tmp_path, GOOD)), env={"NAMESPACE": ""})
    assert config.core.namespace == "monitoring"


def test_secrets_are_masked(tmp_path: Path) -> None:
    config, _ = load(str(write(tmp_path, GOOD)), env={})
    shown = masked(config.plugin("example"))
    assert shown["token"] == SECRET_MASK
    assert "s3cret" not in repr(shown)
    assert shown["greeting"] == "hi"


def test_config_path_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert config_path(None, env={}) is None
    (tmp_path / "clusterpulse.toml").write_text("")
    assert config_path(None, env={}) == Path("clusterpulse.toml")
    assert config_path(None, env={"CLUSTERPULSE_CONFIG": "/x.toml"}) == Path("/x.toml")
    assert config_path("/y.toml", env={"CLUSTERPULSE_CONFIG": "/x.toml"}) == Path("/y.toml")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_number_that_is_not_finite_is_refused_in_the_file_and_ignored_in_the_environment(
    tmp_path: Path, value: str
) -> None:
    """TOML writes nan and inf; no minimum refuses NaN, and an infinite request_timeout is no deadline."""
    path = write(tmp_path, f"[clusterpulse]\nrequest_timeout = {value}\nqueue_base_delay = {value}\n")
    with pytest.raises(ConfigError) as caught:
        read_config(path, env={})
    assert caught.value.errors == [
        f"clusterpulse.queue_base_delay: expected a finite number, got {float(value)!r}",
        f"clusterpulse.request_timeout: expected a finite number, got {float(value)!r}",
    ]
    # The environment's rule: what does not parse as a number gives the default (docs/compatibility.md#environment).
    config, _ = load(None, env={"CPU_CRITICAL_THRESHOLD": value})
    assert config.plugin("cluster").cpu_critical_threshold == 90.0
