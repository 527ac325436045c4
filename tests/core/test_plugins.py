"""Discovery and registration of plugins through entry points (tests/plugins/clusterpulse-example)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterpulse_core import hookimpl
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.plugins import (
    PluginDefaults,
    PluginError,
    PluginHost,
    installed_plugins,
    not_installed,
    plan_plugins,
    plugin_defaults,
)


def test_enabled_plugin_is_found_and_registered() -> None:
    host = PluginHost(["example"])
    assert host.order == ["example"]
    assert "shout" in host.contributions.functions
    contribution = host.contributions.functions["shout"]
    assert contribution.plugin == "example"
    assert contribution.impl("hi") == "HI!"
    assert contribution.meta == {"min_args": 1, "max_args": 1}
    assert "clusterpulse_register_functions" in host.hooks_of("example")


def test_installed_but_not_enabled_plugin_is_ignored() -> None:
    names = {p.name for p in installed_plugins()}
    assert {"example", "example-clash", "example-broken"} <= names
    host = PluginHost([])
    assert host.order == []
    assert len(host.contributions.functions) == 0


def test_installed_plugins_name_their_distribution() -> None:
    example = next(p for p in installed_plugins() if p.name == "example")
    assert example.distribution == "clusterpulse-example"
    assert example.version == "0.1.0"


def test_missing_plugin_names_it_and_the_distribution() -> None:
    expected = r"plugin 'nosuch' is enabled but not installed \(installed plugins: alerts, cluster, "
    with pytest.raises(PluginError, match=expected):
        PluginHost(["example", "nosuch"])


def test_broken_plugin_names_it_and_the_cause() -> None:
    with pytest.raises(PluginError, match=r"plugin 'example-broken' .* failed to import: ModuleNotFoundError"):
        PluginHost(["example-broken"])


def test_duplicate_function_names_both_plugins() -> None:
    host = PluginHost(["example", "example-clash"])
    with pytest.raises(PluginError, match=r"'shout' is registered by both plugin 'example' and plugin 'example-clash'"):
        host.contributions  # noqa: B018


def test_core_api_version_mismatch_is_refused() -> None:
    with pytest.raises(PluginError, match=r"'example-future' needs core API version 99, this core provides 1"):
        PluginHost(["example-future"])


def test_misspelled_hook_fails_fast() -> None:
    with pytest.raises(PluginError, match=r"'example-misspelled'.*unknown hook 'clusterpulse_confgure'"):
        PluginHost(["example-misspelled"])


def test_wrong_hook_arguments_fail_at_registration() -> None:
    class Wrong:
        @hookimpl
        def clusterpulse_configure(self, cfg: Any) -> None:
            """Argument misnamed."""

    with pytest.raises(PluginError, match=r"(?s)plugin 'wrong'.*Argument\(s\) \{'cfg'\} are declared"):
        PluginHost([], extra={"wrong": Wrong()})


def test_plugins_load_in_config_order() -> None:
    assert PluginHost(["example-clash", "example"]).order == ["example-clash", "example"]
    assert PluginHost(["example", "example-clash"]).order == ["example", "example-clash"]


def test_plugin_enabled_twice_is_an_error() -> None:
    with pytest.raises(PluginError, match=r"plugin 'example' is enabled twice"):
        PluginHost(["example", "example"])


def test_kind_declared_twice_names_both_plugins() -> None:
    kind = ResourceKind("test.clusterpulse.io", "v1", "Widget", "widgets", schema={"type": "object"})

    class Owner:
        @hookimpl
        def clusterpulse_resource_kinds(self) -> list[ResourceKind]:
            return [kind]

    host = PluginHost([], extra={"one": Owner(), "two": Owner()})
    with pytest.raises(PluginError, match=r"'Widget' is declared by both plugin 'one' and plugin 'two'"):
        host.kinds  # noqa: B018


def test_without_a_list_the_installed_project_plugins_are_enabled() -> None:
    plan = plan_plugins(None, {}, installed=["cluster", "redis", "example", "vmwriter"])
    assert plan.names == ("redis", "cluster", "vmwriter")  # project order; third-party only by name
    assert dict(plan.skipped) == {
        "registry": "not installed (pip install clusterpulse-registry)",
        "metricsource": "not installed (pip install clusterpulse-metricsource)",
        "policy": "not installed (pip install clusterpulse-policy)",
        "alerts": "not installed (pip install clusterpulse-alerts)",
        "ingester": "not installed (pip install clusterpulse-ingester)",
    }
    assert not plan.explicit


def test_the_defaults_come_from_the_distribution_that_publishes_the_plugins_not_the_core() -> None:
    # clusterpulse-model declares ClusterPulse's plugins (entry-point group clusterpulse.defaults).
    from clusterpulse_model.defaults import DEFAULTS

    assert plugin_defaults() == DEFAULTS
    assert DEFAULTS.plugins[:2] == ("redis", "cluster") and DEFAULTS.enabling_env == {"vmwriter": "VM_ENABLED"}
    core = Path(__import__("clusterpulse_core").__file__).parent
    for path in core.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert '"ingester"' not in text and '"vmwriter"' not in text, f"{path} names a ClusterPulse plugin"
    other = PluginDefaults(("audit", "redis"), {"audit": "AUDIT_ENABLED"})
    plan = plan_plugins(None, {"AUDIT_ENABLED": "true", "VM_ENABLED": "true"}, ["redis", "audit", "vmwriter"], other)
    assert plan.names == ("audit", "redis") and plan.skipped == ()
    assert not_installed("audit", [], other) == (
        "plugin 'audit' is enabled but not installed (pip install clusterpulse-audit)"
    )
    assert "pip install" not in not_installed("ingester", [], other)  # advice only for the published names


def test_an_explicit_list_is_kept_and_an_upstream_variable_adds_its_plugin() -> None:
    installed = ["redis", "vmwriter", "example"]
    assert plan_plugins(["redis", "example"], {}, installed).names == ("redis", "example")
    assert plan_plugins(["redis"], {"VM_ENABLED": "true"}, installed).names == ("redis", "vmwriter")
    assert plan_plugins(["redis"], {"VM_ENABLED": "True"}, installed).names == ("redis",)  # upstream: case-sensitive
    missing = plan_plugins(["redis"], {"VM_ENABLED": "1"}, ["redis"])
    assert missing.names == ("redis",)
    assert missing.skipped == (
        ("vmwriter", "VM_ENABLED is set but the plugin is not installed (pip install clusterpulse-vmwriter)"),
    )


def test_a_tolerant_host_loads_what_it_can_and_names_the_rest() -> None:
    host = PluginHost(["example", "example-broken", "nosuch", "example-misspelled"], tolerant=True)
    assert host.order == ["example"]
    assert host.failures["example-broken"].startswith(
        "plugin 'example-broken' (clusterpulse_example.broken) failed to import: ModuleNotFoundError: "
    )
    assert host.failures["nosuch"] == not_installed("nosuch")
    assert not_installed("nosuch").startswith("plugin 'nosuch' is enabled but not installed (installed plugins: ")
    assert host.failures["example-misspelled"].startswith("plugin 'example-misspelled': ")
    assert "shout" in host.contributions.functions
