"""Settings, environment variables and the plugin's hooks."""

from __future__ import annotations

import pytest
from clusterpulse_vmwriter import VMSettings
from clusterpulse_vmwriter.plugin import VMWriterPlugin

from clusterpulse_core.config import Config, ConfigError, build_settings, masked
from clusterpulse_core.plugins import PluginHost

PATH = "plugins.vmwriter"


def test_defaults_are_upstream() -> None:
    settings = build_settings(VMSettings, {}, PATH, env={})
    assert settings.enabled is False
    assert settings.import_url == "http://victoriametrics:8428/api/v1/import/prometheus"
    assert (settings.timeout, settings.queue_cycles) == (10.0, 10)


@pytest.mark.parametrize(
    ("raw", "enabled"), [("true", True), ("1", True), ("yes", True), ("TRUE", False), ("on", False), ("", False)]
)
def test_vm_enabled_follows_the_upstream_bool_rules(raw: str, enabled: bool) -> None:
    assert build_settings(VMSettings, {}, PATH, env={"VM_ENABLED": raw}).enabled is enabled


def test_vm_endpoint_overrides_the_file_and_loses_trailing_slashes() -> None:
    settings = build_settings(
        VMSettings, {"endpoint": "http://file:1"}, PATH, env={"VM_ENDPOINT": "http://vm.example:8428//"}
    )
    assert settings.base_url == "http://vm.example:8428"
    assert settings.import_url == "http://vm.example:8428/api/v1/import/prometheus"


def test_file_settings_are_typed_and_secrets_masked() -> None:
    settings = build_settings(
        VMSettings,
        {"extra_labels": {"region": "eu"}, "password": "pw", "username": "u", "batch_size": 100},
        PATH,
        env={},
    )
    assert settings.extra_labels == {"region": "eu"}
    assert masked(settings)["password"] == "********"
    with pytest.raises(ConfigError, match=r"plugins\.vmwriter\.batch_size: expected a value >= 1"):
        build_settings(VMSettings, {"batch_size": 0}, PATH, env={})
    with pytest.raises(ConfigError, match=r"plugins\.vmwriter\.timeout: expected number"):
        build_settings(VMSettings, {"timeout": "soon"}, PATH, env={})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (VMSettings(endpoint="victoriametrics:8428"), "expected an http"),
        (VMSettings(extra_labels={"cluster": "x"}), "reserved"),
        (VMSettings(extra_labels={"bad-name": "x"}), "not a valid label name"),
        (VMSettings(username="u", bearer_token="t"), "not both"),
        (VMSettings(retry_backoff=5.0, retry_backoff_max=1.0), "retry_backoff_max"),
        (VMSettings(password="p", password_file="/p"), r"plugins\.vmwriter\.password_file: set either password"),
        (VMSettings(bearer_token="t", bearer_token_file="/t"), r"plugins\.vmwriter\.bearer_token_file: set either"),
        (VMSettings(username="u", bearer_token_file="/t"), "not both"),
        (
            VMSettings(bearer_token_file="/nonexistent/token"),
            r"plugins\.vmwriter\.bearer_token_file: cannot read "
            r"/nonexistent/token",
        ),
    ],
)
def test_unusable_settings_are_refused(settings: VMSettings, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings.check()


def test_credentials_come_from_the_environment() -> None:
    settings = build_settings(
        VMSettings,
        {},
        PATH,
        env={"VM_USERNAME": "writer", "VM_PASSWORD": "pw", "VM_PASSWORD_FILE": "", "VM_BEARER_TOKEN": ""},
    )
    assert (settings.username, settings.basic_password(), settings.token()) == ("writer", "pw", "")
    settings = build_settings(VMSettings, {}, PATH, env={"VM_BEARER_TOKEN_FILE": "/run/secrets/vm/token"})
    assert settings.bearer_token_file == "/run/secrets/vm/token"


def test_disabled_plugin_provides_no_backend() -> None:
    host = PluginHost([], extra={"vmwriter": VMWriterPlugin})
    host.configure(Config(plugins={"vmwriter": VMSettings(enabled=False)}))
    assert host.storage_backends() == []


def test_enabled_plugin_provides_one_backend() -> None:
    host = PluginHost(["vmwriter"])
    host.configure(Config(plugins={"vmwriter": VMSettings(enabled=True)}))
    [backend] = host.storage_backends()
    assert backend.name == "vmwriter" and backend.ready() is None
    assert host.storage_backends() == [backend]
    backend.close()
