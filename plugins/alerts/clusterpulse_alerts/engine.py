"""Alert lifecycle: pending -> firing after ``for`` -> resolved, per target (cluster or registry).

The engine keeps the last view of every target (:mod:`clusterpulse_model.alerting`) and the
active alerts of each. Evaluating a target runs every rule for its kind and returns the
pieces to store: an :class:`AlertPiece` and an ``alert.fired`` event when an alert starts
firing, the piece again to refresh one still firing, an :class:`AlertResolution` and an
``alert.resolved`` event when it stops. A rule that answers ``None`` (cannot tell) leaves
its alerts as they are.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import attrs
from clusterpulse_model import Alert
from clusterpulse_model.alerting import ClusterView, Finding, RegistryView, Target
from clusterpulse_model.pieces import AlertPiece, AlertResolution, EventPiece

from clusterpulse_core.clock import utcnow
from clusterpulse_core.pieces import Piece
from clusterpulse_core.serde import unstructure

log = logging.getLogger(__name__)

FIRED = "alert.fired"
RESOLVED = "alert.resolved"
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@attrs.frozen
class Rule:
    """A rule ready to evaluate: ``check(view)`` returns findings, or ``None`` for "cannot tell"."""

    key: str
    name: str
    severity: str
    target: Target
    for_seconds: float
    source: str
    check: Callable[[Any], Iterable[Finding] | None] = attrs.field(eq=False)


def alert_id(rule_key: str, rule_name: str, finding: Finding) -> str:
    """Stable id: the rule name (key-safe) and a digest of rule key + object identity."""
    identity = "\0".join((rule_key, finding.resource_type, finding.namespace, finding.resource_name))
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    prefix = _ID_UNSAFE.sub("-", rule_name).strip("-")[:64] or "alert"
    return f"{prefix}-{digest}"


def event_data(alert: Alert) -> dict[str, Any]:
    """The payload of ``alert.fired`` / ``alert.resolved``: the alert's fields."""
    data: dict[str, Any] = unstructure(alert)
    return data


@attrs.define
class Active:
    """One pending or firing alert of a target."""

    rule: str
    alert: Alert
    since: float
    firing: bool


TargetKey = tuple[str, str]  # ("cluster" | "registry", name)


class Engine:
    """Views, rules and active alerts, behind one lock; every method returns the pieces to store."""

    def __init__(
        self,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        restore_grace: float = 120.0,
    ) -> None:
        self.clock = clock
        self.monotonic = monotonic
        self.restore_grace = restore_grace
        self.lock = threading.RLock()
        self.rules: dict[str, Rule] = {}
        self.clusters: dict[str, ClusterView] = {}
        self.registries: dict[str, RegistryView] = {}
        self.active: dict[TargetKey, dict[str, Active]] = {}
        self._started = monotonic()

    def mark_started(self) -> None:
        """Start the ``restore_grace`` window now (the manager is starting)."""
        with self.lock:
            self._started = self.monotonic()

    # ------------------------------------------------------------------ rules

    def set_rule(self, rule: Rule) -> None:
        """Add or replace a rule (its alerts are re-evaluated at the next evaluation)."""
        with self.lock:
            self.rules[rule.key] = rule

    def remove_rule(self, key: str) -> list[Piece]:
        """Drop a rule and resolve its firing alerts everywhere."""
        with self.lock:
            self.rules.pop(key, None)
            out: list[Piece] = []
            now = self.clock()
            for (_kind, name), active in self.active.items():
                for alert_id_, entry in list(active.items()):
                    if entry.rule == key:
                        del active[alert_id_]
                        if entry.firing:
                            out += _resolved(name, entry.alert, now)
            return out

    # ------------------------------------------------------------------ state

    def restore(self, alerts: Sequence[Alert]) -> int:
        """Alerts read back from storage after a restart: firing already, never announced again."""
        with self.lock:
            now = self.monotonic()
            for alert in alerts:
                key = (self.target_kind(alert), alert.cluster)
                self.active.setdefault(key, {}).setdefault(alert.id, Active(alert.rule, alert, now, True))
            return len(alerts)

    def target_kind(self, alert: Alert) -> str:
        """Whether a stored alert belongs to a cluster or a registry (its rule's target)."""
        rule = self.rules.get(alert.rule)
        return rule.target if rule else ("registry" if alert.resource_type == "registry" else "cluster")

    def in_restore_grace(self) -> bool:
        """Whether the ``restore_grace`` window after start is still open."""
        return self.monotonic() - self._started < self.restore_grace

    def adopt(self, kind: str, name: str, alerts: Sequence[Alert]) -> None:
        """A target taken over from another replica (sharding): the alerts it stored replace what was known.

        They continue firing without being announced again, and resolve here when they stop.
        """
        with self.lock:
            now = self.monotonic()
            self.active[(kind, name)] = {alert.id: Active(alert.rule, alert, now, True) for alert in alerts}

    def release(self, kind: str, name: str) -> None:
        """A target another replica holds now (sharding): forget its view and alerts, storing nothing.

        Its alerts stay stored; the new holder adopts them.
        """
        with self.lock:
            (self.clusters if kind == "cluster" else self.registries).pop(name, None)
            self.active.pop((kind, name), None)

    def update_cluster(self, name: str, **changes: Any) -> None:
        """Replace fields of a cluster's view (creating it)."""
        with self.lock:
            view = self.clusters.get(name) or ClusterView(name)
            self.clusters[name] = attrs.evolve(view, **changes)

    def update_registry(self, name: str, **changes: Any) -> None:
        """Replace fields of a registry's view (creating it)."""
        with self.lock:
            view = self.registries.get(name) or RegistryView(name)
            self.registries[name] = attrs.evolve(view, **changes)

    def drop(self, kind: str, name: str) -> list[Piece]:
        """A deleted cluster or registry: forget it; its alerts go without events (the target is gone)."""
        with self.lock:
            (self.clusters if kind == "cluster" else self.registries).pop(name, None)
            active = self.active.pop((kind, name), {})
            return [AlertResolution(name, entry.alert) for entry in active.values() if entry.firing]

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, kind: str, name: str, refresh: bool = True) -> list[Piece]:
        """Run every rule of ``kind`` over the target's view; ``refresh`` re-stores firing alerts."""
        with self.lock:
            view: Any = (self.clusters if kind == "cluster" else self.registries).get(name)
            if view is None:
                return []
            return self._evaluate(kind, name, view, refresh)

    def evaluate_all(self, refresh: bool = False) -> list[Piece]:
        """Every known target (the periodic tick: promotes pending alerts whose ``for`` elapsed)."""
        with self.lock:
            out: list[Piece] = []
            for name in list(self.clusters):
                out += self.evaluate("cluster", name, refresh)
            for name in list(self.registries):
                out += self.evaluate("registry", name, refresh)
            return out

    def _evaluate(self, kind: str, name: str, view: Any, refresh: bool) -> list[Piece]:
        now_m, now = self.monotonic(), self.clock()
        found: dict[str, tuple[Rule, Finding]] = {}
        undecided: set[str] = set()
        for rule in self.rules.values():
            if rule.target != kind:
                continue
            try:
                findings = rule.check(view)
                if findings is None:
                    undecided.add(rule.key)
                    continue
                for finding in findings:
                    found[alert_id(rule.key, rule.name, finding)] = (rule, finding)
            except Exception as exc:
                undecided.add(rule.key)
                log.warning("alert rule %s failed on %s %s: %s: %s", rule.key, kind, name, type(exc).__name__, exc)
        active = self.active.setdefault((kind, name), {})
        out: list[Piece] = []
        for id_, (rule, finding) in found.items():
            alert = Alert(
                id=id_,
                name=rule.name,
                severity=rule.severity,
                message=finding.message,
                timestamp=now,
                source=rule.source,
                resource_type=finding.resource_type,
                resource_name=finding.resource_name,
                namespace=finding.namespace,
                cluster=name,
                rule=rule.key,
            )
            entry = active.get(id_)
            if entry is None:
                entry = active[id_] = Active(rule.key, alert, now_m, False)
            if not entry.firing:
                entry.alert = alert
                if now_m - entry.since >= rule.for_seconds:
                    entry.firing = True
                    out += [AlertPiece(name, alert), EventPiece(FIRED, name, event_data(alert), timestamp=now)]
                continue
            current = attrs.evolve(alert, timestamp=entry.alert.timestamp)
            if refresh or current != entry.alert:
                out.append(AlertPiece(name, current))
            entry.alert = current
        grace_over = now_m - self._started >= self.restore_grace
        for id_, entry in list(active.items()):
            if id_ in found or entry.rule in undecided:
                continue
            if entry.rule not in self.rules and not grace_over:
                continue  # restored from storage; its rule may not be loaded yet
            del active[id_]
            if entry.firing:
                out += _resolved(name, entry.alert, now)
        return out

    # ------------------------------------------------------------------ reading

    def firing(self, rule_key: str | None = None) -> list[Alert]:
        """The firing alerts (of one rule), sorted by target and id."""
        with self.lock:
            return sorted(
                (
                    entry.alert
                    for active in self.active.values()
                    for entry in active.values()
                    if entry.firing and (rule_key is None or entry.rule == rule_key)
                ),
                key=lambda a: (a.cluster, a.id),
            )


def _resolved(name: str, alert: Alert, now: datetime) -> list[Piece]:
    return [AlertResolution(name, alert), EventPiece(RESOLVED, name, event_data(alert), timestamp=now)]
