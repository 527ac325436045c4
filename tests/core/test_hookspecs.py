"""The plugin contract: the core declares the framework verbs, plugins declare their own hooks.

``clusterpulse_addhooks`` (historic, as pytest's ``pytest_addhooks``) lets a plugin declare hooks
whatever the load order; ``PluginHost.hook`` reaches a hook another plugin declares, ``None``
when that plugin is not loaded; the hookspec table is generated from the specifications.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pytest

from clusterpulse_core import hookimpl, hookspecs
from clusterpulse_core.hookspecs import HookDeclarer, Register, hookspec, registry
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
from clusterpulse_core.plugins import CORE, HookReconciler, PluginError, PluginHost, plugin_defaults

# A plugin's own hookspecs module, built here as the `audit` plugin would write it.
audit_specs = types.ModuleType("audit_specs")


@hookspec(firstresult=True)
def clusterpulse_audit_owner(namespace: str) -> str | None:
    """Who owns a namespace (first answer wins)."""


@hookspec
@registry("audit_checks")
def clusterpulse_register_audit_checks(register: Register) -> None:
    """Register audit checks."""


audit_specs.clusterpulse_audit_owner = clusterpulse_audit_owner  # type: ignore[attr-defined]
audit_specs.clusterpulse_register_audit_checks = clusterpulse_register_audit_checks  # type: ignore[attr-defined]


class Audit:
    """Declares the audit hooks and answers one of them."""

    clusterpulse_api_version = 1

    @hookimpl
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        pluginmanager.add_hookspecs(audit_specs)

    @hookimpl(trylast=True)
    def clusterpulse_audit_owner(self, namespace: str) -> str | None:
        return "platform-team"


class Owners:
    """Implements the audit plugin's hooks without importing it (optional: loads without it)."""

    clusterpulse_api_version = 1

    @hookimpl(optionalhook=True)
    def clusterpulse_audit_owner(self, namespace: str) -> str | None:
        return "payments-team" if namespace == "payments" else None

    @hookimpl(optionalhook=True)
    def clusterpulse_register_audit_checks(self, register: Register) -> None:
        register("has-owner", lambda obj: True)


def test_a_plugin_declares_hooks_whatever_the_load_order() -> None:
    for extra in ({"owners": Owners(), "audit": Audit()}, {"audit": Audit(), "owners": Owners()}):
        host = PluginHost([], extra=extra)
        hook = host.hook("clusterpulse_audit_owner")
        assert hook is not None
        assert hook(namespace="payments") == "payments-team"  # firstresult, Audit's answer trylast
        assert hook(namespace="web") == "platform-team"
        assert host.contributions.audit_checks["has-owner"].plugin == "owners"
        assert host.declared_by["clusterpulse_audit_owner"] == "audit"


def test_an_implementation_registered_before_the_declarer_is_checked_against_it() -> None:
    class Misnamed:
        clusterpulse_api_version = 1

        @hookimpl
        def clusterpulse_audit_owner(self, ns: str) -> str | None:
            return None

    with pytest.raises(PluginError, match=r"(?s)plugin 'misnamed'.*Argument\(s\) \{'ns'\} are declared"):
        PluginHost([], extra={"misnamed": Misnamed(), "audit": Audit()})
    tolerant = PluginHost([], extra={"misnamed": Misnamed(), "audit": Audit()}, tolerant=True)
    assert tolerant.order == ["audit"] and "misnamed" in tolerant.failures


def test_without_the_declaring_plugin_the_hook_is_none_and_optional_implementations_load() -> None:
    host = PluginHost([], extra={"owners": Owners()})
    assert host.order == ["owners"] and not host.failures
    assert host.hook("clusterpulse_audit_owner") is None
    assert host.hook("clusterpulse_no_such_hook") is None
    assert len(host.contributions.audit_checks) == 0


def test_an_unknown_hook_is_still_refused() -> None:
    class Stray:
        @hookimpl
        def clusterpulse_audit_owner(self, namespace: str) -> str | None:
            return None

    with pytest.raises(PluginError, match=r"'stray'.*unknown hook 'clusterpulse_audit_owner'.*no loaded plugin"):
        PluginHost([], extra={"stray": Stray()})


def test_a_hook_declared_twice_names_both_plugins() -> None:
    with pytest.raises(
        PluginError,
        match=r"plugin 'again' declares hook 'clusterpulse_audit_owner', already "
        r"declared by 'audit'",
    ):
        PluginHost([], extra={"audit": Audit(), "again": Audit()})


def test_a_hook_that_moved_to_a_plugin_still_loads_without_it(caplog: pytest.LogCaptureFixture) -> None:
    class OldMedian:
        """Written against the earlier contract, where the core declared the aggregation registry."""

        clusterpulse_api_version = 1

        @hookimpl
        def clusterpulse_register_aggregations(self, register: Register) -> None:
            register("median", lambda values, spec: sorted(values)[len(values) // 2])

    alone = PluginHost([], extra={"median": OldMedian()})
    assert alone.order == ["median"]
    assert any(
        "implements clusterpulse_register_aggregations, which no loaded plugin declares" in w for w in alone.warnings
    )
    with_declarer = PluginHost(["metricsource"], extra={"median": OldMedian()})
    assert with_declarer.contributions.aggregations["median"].plugin == "median"
    assert not any("median" in warning for warning in with_declarer.warnings)


def test_the_core_declares_only_framework_verbs() -> None:
    declared = {
        name
        for name in vars(hookspecs)
        if name.startswith("clusterpulse_") and inspect.isfunction(getattr(hookspecs, name))
    }
    assert not declared & set(hookspecs.MOVED_HOOKS)
    assert not hasattr(hookspecs, "PER_PLUGIN_HOOKS") and not hasattr(hookspecs, "REGISTRY_HOOKS")
    for name in declared:
        assert getattr(getattr(hookspecs, name), hookspecs.CALLED_ATTRIBUTE, ""), f"{name}: called how?"


def test_the_hookspec_table_covers_every_declared_hook() -> None:
    host = PluginHost(list(plugin_defaults().plugins))
    rows = host.hookspec_table()
    by_hook = {row.hook: row for row in rows}
    assert len(by_hook) == len(rows)
    assert by_hook["clusterpulse_addhooks"].declared_by == CORE
    assert rows[0].hook == "clusterpulse_addhooks"  # the core's hooks first, in phase order
    moved_to = {
        "metricsource": [
            "clusterpulse_register_aggregations",
            "clusterpulse_register_field_types",
            "clusterpulse_register_filter_operators",
            "clusterpulse_expression_compiler",
            "clusterpulse_aggregate_resources",
        ],
        "alerts": ["clusterpulse_register_alert_rules", "clusterpulse_stored_alerts"],
        "ingester": ["clusterpulse_agent_connection", "clusterpulse_agent_sources", "clusterpulse_agent_read_types"],
        "cluster": ["clusterpulse_cluster_health", "clusterpulse_fleet"],
        "policy": ["clusterpulse_stored_policies"],
    }
    for declarer, hooks in moved_to.items():
        for hook in hooks:
            assert by_hook[hook].declared_by == declarer, hook
    assert set(hookspecs.MOVED_HOOKS) | {"clusterpulse_fleet"} == {h for hooks in moved_to.values() for h in hooks}
    assert by_hook["clusterpulse_aggregate_resources"].called.startswith("first result")
    assert all(row.called for row in rows)
    specified = {name for name, caller in vars(host.pm.hook).items() if getattr(caller, "has_spec", lambda: False)()}
    assert set(by_hook) == specified


def test_registry_tables_come_from_the_declared_registry_hooks() -> None:
    host = PluginHost(list(plugin_defaults().plugins))
    assert host.registry_hooks() == {
        "clusterpulse_register_aggregations": "aggregations",
        "clusterpulse_register_alert_rules": "alert_rules",
        "clusterpulse_register_field_types": "field_types",
        "clusterpulse_register_filter_operators": "filter_operators",
        "clusterpulse_register_functions": "functions",
    }
    contributions = host.contributions
    assert {"count", "percentile"} <= set(contributions.aggregations)
    assert "NodeNotReady" in contributions.alert_rules
    assert contributions.kinds == ["aggregations", "alert_rules", "field_types", "filter_operators", "functions"]


WIDGET = ResourceKind(group="example.com", version="v1", kind="Widget", plural="widgets", schema={})
GADGET = ResourceKind(group="example.com", version="v1", kind="Gadget", plural="gadgets", schema={})


class WidgetReconciler:
    """The object the Widget kind declares."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def reconcile(self, obj: Mapping[str, Any], ctx: Any) -> ReconcileResult | None:
        self.seen.append(obj["metadata"]["name"])
        return ReconcileResult(requeue_after=5.0)

    def forget(self, ref: ObjectRef, ctx: Any) -> bool | ReconcileResult | None:
        self.seen.append(f"forget {ref.name}")
        return True

    def stored_refs(self, runtime: Any) -> Sequence[ObjectRef] | None:
        return [ObjectRef("Widget", "ns", "ghost")]


class Widgets:
    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.reconciler = WidgetReconciler()

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        return [attrs.evolve(WIDGET, reconciler=self.reconciler)]


class Gadgets:
    """Written against the earlier contract: the kind has no reconciler, the hooks reconcile it."""

    clusterpulse_api_version = 1

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        return [GADGET]

    @hookimpl
    def clusterpulse_reconcile(self, kind: ResourceKind, obj: Mapping[str, Any], ctx: Any) -> ReconcileResult:
        return ReconcileResult(requeue_after=7.0)

    @hookimpl
    def clusterpulse_forget(self, kind: ResourceKind, ref: ObjectRef, ctx: Any) -> ReconcileResult:
        return ReconcileResult(requeue_after=1.0)


def test_a_kind_is_reconciled_by_the_object_it_declares_and_old_plugins_by_their_hooks() -> None:
    widgets = Widgets()
    host = PluginHost([], extra={"widgets": widgets, "gadgets": Gadgets()})
    reconciler = host.reconciler("Widget")
    assert reconciler is widgets.reconciler
    assert host.kinds["Widget"] == ("widgets", WIDGET)  # the reconciler is not part of the kind's identity
    assert reconciler.reconcile({"metadata": {"name": "w1"}}, None) == ReconcileResult(requeue_after=5.0)
    assert reconciler.stored_refs(None) == [ObjectRef("Widget", "ns", "ghost")]
    # Gadgets' hooks answer for its own kind only; Widget never reaches them.
    legacy = host.reconciler("Gadget")
    assert isinstance(legacy, HookReconciler) and legacy.owner == "gadgets"
    assert legacy.reconcile({"metadata": {"name": "g1"}}, None) == ReconcileResult(requeue_after=7.0)
    assert legacy.forget(ObjectRef("Gadget", "ns", "g1"), None) == ReconcileResult(requeue_after=1.0)
    assert legacy.stored_refs(None) is None
    assert widgets.reconciler.seen == ["w1"]


def test_first_party_kinds_declare_a_reconciler_of_their_own_not_the_plugin_object() -> None:
    host = PluginHost(list(plugin_defaults().plugins))
    assert set(host.kinds) >= {
        "ClusterConnection",
        "RegistryConnection",
        "MetricSource",
        "MonitorAccessPolicy",
        "AlertRule",
    }
    for name, (owner, kind) in host.kinds.items():
        plugin = host.plugin(owner)
        assert kind.reconciler is not None and kind.reconciler is not plugin, f"{name}: reconciled by its plugin"
        assert host.reconciler(name) is kind.reconciler
        for verb in ("reconcile", "forget", "stored_refs"):
            assert callable(getattr(kind.reconciler, verb)), f"{name}: its reconciler has no {verb}"
            assert not hasattr(plugin, verb), f"{name}: plugin {owner} still carries {verb}"


class Configured:
    """Builds its kind's reconciler from its settings, at configuration (as the first-party plugins do)."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.reconciler = WidgetReconciler()

    @hookimpl
    def clusterpulse_configure(self, config: Any, settings: Any) -> None:
        self.reconciler = WidgetReconciler()

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        return [WIDGET.with_reconciler(self.reconciler)]


def test_the_reconciler_that_runs_is_the_one_built_at_configuration_even_if_kinds_were_read_before() -> None:
    from clusterpulse_core.config import Config

    plugin = Configured()
    host = PluginHost([], extra={"configured": plugin})
    before = host.reconciler("Widget")  # e.g. clusterpulse rbac, or a test reading the kinds first
    host.configure(Config())
    assert before is not plugin.reconciler
    assert host.reconciler("Widget") is plugin.reconciler


class PlainReconcileCall:
    """Implements the wrapped hook without ``wrapper=True``: it would answer instead of the reconciler."""

    clusterpulse_api_version = 1

    @hookimpl
    def clusterpulse_reconcile_call(self, ref: ObjectRef) -> ReconcileResult:
        return ReconcileResult(requeue_after=1.0)


def test_a_plain_implementation_of_the_wrapped_reconcile_call_is_refused_naming_the_plugin() -> None:
    with pytest.raises(PluginError, match="plugin 'plain' implements clusterpulse_reconcile_call without wrapper=True"):
        PluginHost([], extra={"plain": PlainReconcileCall()})
    host = PluginHost([], extra={"plain": PlainReconcileCall(), "widgets": Widgets()}, tolerant=True)
    assert list(host.failures) == ["plain"] and host.order == ["widgets"]
    call = host.reconcile_call(WIDGET, ObjectRef("Widget", "ns", "w1"), "reconcile", None, lambda: None)
    assert call is None  # the reconciler's answer, not the refused plugin's
