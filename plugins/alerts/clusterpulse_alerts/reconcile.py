"""The AlertRule kind's reconciler: compile a rule into the engine, report where it fires."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from clusterpulse_alerts.alertrule import RuleError, compile_rule, rule_key
from clusterpulse_alerts.backend import AlertsBackend, stored_alerts
from clusterpulse_alerts.engine import Engine
from clusterpulse_alerts.settings import AlertsSettings
from clusterpulse_core.clock import utcnow
from clusterpulse_core.context import MAX_STATUS_MESSAGE, ReconcileContext, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult
from clusterpulse_core.logs import clip

#: Clusters listed by name in an AlertRule's status.
STATUS_FIRING_SHOWN = 50


class AlertRuleReconciler:
    """Reconciles AlertRules (the :class:`~clusterpulse_core.kinds.Reconciler` the kind declares).

    Loads each rule into the plugin's ``engine`` and sends what changes through its ``backend``;
    ``settings`` is the plugin's (replaced at configuration).
    """

    def __init__(self, engine: Engine, backend: AlertsBackend, settings: AlertsSettings) -> None:
        self.engine = engine
        self.backend = backend
        self.settings = settings
        #: Sharded: the clusters each rule fires on, as stored by every replica, and when read.
        self._stored_firing: tuple[float, dict[str, set[str]]] | None = None
        self._stored_lock = threading.Lock()

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

    def forget_stored(self) -> None:
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
