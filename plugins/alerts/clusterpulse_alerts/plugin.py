"""The ``alerts`` plugin: built-in rules, rule contributions, the AlertRule kind, ``clusterpulse alerts``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import click
from clusterpulse_model.alerting import AlertRuleDef

from clusterpulse_alerts.backend import AlertsBackend, stored_alerts
from clusterpulse_alerts.crd import ALERT_RULE
from clusterpulse_alerts.engine import Engine, Rule
from clusterpulse_alerts.reconcile import AlertRuleReconciler
from clusterpulse_alerts.rules import register_builtin_rules
from clusterpulse_alerts.settings import AlertsSettings, RuleOverride
from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config, ConfigError
from clusterpulse_core.context import Runtime
from clusterpulse_core.hookspecs import HookDeclarer, Register
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.store import StorageBackend

log = logging.getLogger(__name__)


def contributed_rules(
    definitions: Mapping[str, AlertRuleDef], overrides: Mapping[str, RuleOverride], default_for: float
) -> list[Rule]:
    """Engine rules from the registered definitions with ``[plugins.alerts.rules.*]`` applied."""
    unknown = sorted(set(overrides) - set(definitions))
    if unknown:
        raise ConfigError(
            f"plugins.alerts.rules.{unknown[0]}: no alert rule named {unknown[0]!r} "
            f"(registered: {', '.join(sorted(definitions))})"
        )
    rules = []
    for name, definition in definitions.items():
        override = overrides.get(name, RuleOverride())
        if not override.enabled:
            continue
        for_seconds = definition.for_seconds if default_for < 0 else default_for
        if override.for_seconds is not None:
            for_seconds = override.for_seconds
        threshold = override.threshold if override.threshold is not None else definition.threshold

        def check(view: Any, _evaluate: Any = definition.evaluate, _threshold: float | None = threshold) -> Any:
            return _evaluate(view, _threshold)

        source = "builtin" if definition.plugin == "alerts" else f"plugin {definition.plugin}"
        rules.append(
            Rule(
                key=name,
                name=name,
                severity=override.severity or definition.severity,
                target=definition.target,
                for_seconds=for_seconds,
                source=source,
                check=check,
            )
        )
    return rules


class AlertsPlugin:
    """Alerts derived from stored state, written through the store fan-out (docs/compatibility.md#r4)."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.settings = AlertsSettings()
        self.engine = Engine(restore_grace=self.settings.restore_grace)
        self.backend = AlertsBackend(self.engine)
        self.reconciler = AlertRuleReconciler(self.engine, self.backend, self.settings)
        self.runtime: Runtime | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @hookimpl
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        """Declare this plugin's hooks (:mod:`clusterpulse_alerts.hookspecs`)."""
        from clusterpulse_alerts import hookspecs

        pluginmanager.add_hookspecs(hookspecs)

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.alerts]`` is validated by :class:`AlertsSettings`."""
        return AlertsSettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: AlertsSettings) -> None:
        """Keep the settings; the per-rule tables are checked here, rule names at start."""
        settings.overrides()
        self.settings = self.reconciler.settings = settings
        self.engine.restore_grace = settings.restore_grace

    @hookimpl
    def clusterpulse_register_alert_rules(self, register: Register) -> None:
        """The built-in rules (nodes, cluster, ClusterOperators, OLM, requests, registries, MetricSources)."""
        register_builtin_rules(register)

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[StorageBackend]:
        """The read-only backend that feeds the rules."""
        return [self.backend]

    @hookimpl
    def clusterpulse_start(self, runtime: Runtime) -> None:
        """Load the rules, restore firing alerts from storage, start emitting and the ticker."""
        self.runtime = runtime
        self.engine.mark_started()
        definitions = {
            name: AlertRuleDef.from_registration(name, c.impl, c.plugin, c.meta)
            for name, c in runtime.contributions.alert_rules.items()
        }
        for rule in contributed_rules(definitions, self.settings.overrides(), self.settings.default_for):
            self.engine.set_rule(rule)
        try:
            restored = stored_alerts(runtime)
        except Exception as exc:
            # Alerting still works; alerts firing before the restart are announced once more.
            log.warning(
                "could not read the firing alerts back (%s: %s); starting without them", type(exc).__name__, exc
            )
            restored = []
        if restored:
            log.info("restored %d firing alerts", self.engine.restore(restored))
        self.backend.runtime = runtime
        self.backend.emit = runtime.store.put
        self._stop.clear()
        self._ticker = threading.Thread(target=self._tick, name="alerts-ticker", daemon=True)
        self._ticker.start()

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        """Stop the ticker and emitting (state is in storage; a restart reads it back)."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5.0)
        self.backend.emit = None
        self.backend.runtime = None

    def _tick(self) -> None:
        while not self._stop.wait(self.settings.evaluation_interval):
            try:
                self.backend.release_lost()
                with self.engine.lock:
                    out = self.engine.evaluate_all(refresh=False)
                self.backend.send(out)
            except Exception:
                log.exception("alert evaluation failed")

    # ------------------------------------------------------------------ the AlertRule kind

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        """The AlertRule kind, reconciled by :class:`AlertRuleReconciler`."""
        return [ALERT_RULE.with_reconciler(self.reconciler)]

    @hookimpl
    def clusterpulse_storage_lost(self, runtime: Runtime, reason: str) -> None:
        """Storage lost its data: the cached read of the stored alerts is stale."""
        self.reconciler.forget_stored()

    # ------------------------------------------------------------------ CLI

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group, plugins: PluginHost) -> None:
        """``clusterpulse alerts``: what is firing, read from storage."""
        from clusterpulse_alerts.cli import make_alerts_command

        cli.add_command(make_alerts_command(plugins))
