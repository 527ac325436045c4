"""The ``alerts`` plugin: built-in rules, rule contributions, the AlertRule kind, ``clusterpulse alerts``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import click
from clusterpulse_model.alerting import AlertRuleDef

from clusterpulse_alerts.alertrule import RuleError, compile_rule, rule_key
from clusterpulse_alerts.backend import AlertsBackend, stored_alerts
from clusterpulse_alerts.crd import ALERT_RULE
from clusterpulse_alerts.engine import Engine, Rule
from clusterpulse_alerts.rules import register_builtin_rules
from clusterpulse_alerts.settings import AlertsSettings, RuleOverride
from clusterpulse_core import hookimpl
from clusterpulse_core.clock import utcnow
from clusterpulse_core.config import Config, ConfigError
from clusterpulse_core.context import MAX_STATUS_MESSAGE, ReconcileContext, Runtime
from clusterpulse_core.hookspecs import HookDeclarer, Register
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
from clusterpulse_core.logs import clip
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.store import StorageBackend

log = logging.getLogger(__name__)

#: Clusters listed by name in an AlertRule's status.
STATUS_FIRING_SHOWN = 50


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
        self.runtime: Runtime | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        #: Sharded: the clusters each rule fires on, as stored by every replica, and when read.
        self._stored_firing: tuple[float, dict[str, set[str]]] | None = None
        self._stored_lock = threading.Lock()

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
        self.settings = settings
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
        """The AlertRule kind.

        Reconciled by this plugin object (its ``reconcile``, ``forget`` and ``stored_refs``).
        """
        return [ALERT_RULE.with_reconciler(self)]

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
        """Compile the rule (``phase: Error`` with the position when invalid); report where it fires.

        With sharding every replica loads the rule and evaluates it on the clusters it holds;
        only the replica holding the AlertRule writes its status, counting the alerts every
        replica stored.
        """
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        key = rule_key(namespace, name)
        compiler = ctx.runtime.plugins.hook("clusterpulse_expression_compiler")  # None: no metricsource
        shard = ctx.runtime.shard
        sharded = shard is not None and bool(ctx.kind.split_by)
        reports = shard is None or not ctx.kind.split_by or shard.admit(ctx.ref)
        try:
            rule = compile_rule(obj, compiler() if compiler is not None else None, ctx.runtime.contributions.functions)
        except RuleError as exc:
            # The last good rule (if any) keeps evaluating, so its alerts are not resolved by a typo;
            # the status says the spec is in error. A repeating failure is logged when it changes.
            message = clip(str(exc), MAX_STATUS_MESSAGE)
            before = obj.get("status") or {}
            repeated = before.get("phase") == "Error" and before.get("message") == message
            (ctx.log.debug if repeated else ctx.log.warning)("invalid AlertRule: %s", message)
            if reports:
                self._report(
                    obj, ctx, key, sharded, {"phase": "Error", "message": message, "errorPosition": exc.position}
                )
            return ReconcileResult(requeue_after=None, error=message)
        self.backend.release_lost()
        with self.engine.lock:
            self.engine.set_rule(rule)
            out = []
            for cluster in list(self.engine.clusters):
                out += self.engine.evaluate("cluster", cluster, refresh=False)
        self.backend.send(out)
        if reports:
            self._report(obj, ctx, key, sharded, {"phase": "Ready", "errorPosition": None})
        return ReconcileResult(requeue_after=self.settings.status_interval)

    def _report(
        self, obj: Mapping[str, Any], ctx: ReconcileContext, key: str, sharded: bool, status: dict[str, Any]
    ) -> None:
        """Patch the status with where the rule fires now (nowhere while no good spec was ever loaded)."""
        firing = (
            self._firing_everywhere(key, ctx)
            if sharded
            else sorted({alert.cluster for alert in self.engine.firing(key)})
        )
        if firing is None:
            if status["phase"] == "Ready":
                return
            firing = []
        status.setdefault("message", f"firing on {len(firing)} clusters")
        self._patch(obj, ctx, {**status, "firingClusters": len(firing), "firing": firing[:STATUS_FIRING_SHOWN]})

    def _firing_everywhere(self, key: str, ctx: ReconcileContext) -> list[str] | None:
        """The clusters rule ``key`` fires on, as every replica stored them; None when storage cannot be read.

        One read of the stored alerts serves every rule's status for half a status interval (a
        status is refreshed once an interval anyway), so many AlertRules cost one scan.
        """
        with self._stored_lock:
            now = time.monotonic()
            if self._stored_firing is None or now - self._stored_firing[0] >= self.settings.status_interval / 2:
                try:
                    alerts = stored_alerts(ctx.runtime)
                except Exception as exc:
                    ctx.log.warning(
                        "status not refreshed: cannot read the stored alerts (%s: %s)", type(exc).__name__, exc
                    )
                    return None
                by_rule: dict[str, set[str]] = {}
                for alert in alerts:
                    by_rule.setdefault(alert.rule, set()).add(alert.cluster)
                self._stored_firing = (now, by_rule)
            return sorted(self._stored_firing[1].get(key, ()))

    @staticmethod
    def _patch(obj: Mapping[str, Any], ctx: ReconcileContext, status: dict[str, Any]) -> None:
        """Merge-patch the status when something other than the time changed (C10)."""
        current = obj.get("status") or {}
        generation = (obj.get("metadata") or {}).get("generation")
        status["observedGeneration"] = generation
        if all(current.get(k) == v for k, v in status.items()):
            return
        status["lastEvaluated"] = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
        ctx.patch_status(status)

    @hookimpl
    def clusterpulse_storage_lost(self, runtime: Runtime, reason: str) -> None:
        """Storage lost its data: the cached read of the stored alerts is stale."""
        with self._stored_lock:
            self._stored_firing = None

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        """A deleted AlertRule: its alerts resolve."""
        self.backend.send(self.engine.remove_rule(rule_key(ref.namespace, ref.name)))
        return True

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """AlertRules keep nothing in storage of their own (their alerts resolve with the rule): not swept."""
        return None

    # ------------------------------------------------------------------ CLI

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group, plugins: PluginHost) -> None:
        """``clusterpulse alerts``: what is firing, read from storage."""
        from clusterpulse_alerts.cli import make_alerts_command

        cli.add_command(make_alerts_command(plugins))
