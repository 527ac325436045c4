"""The built-in rules and the lifecycle, through the real store fan-out (alerts backend + a recorder).

Pieces go in as a reconcile stores them; what the alerts backend stores back is what the
recording backend receives. The engine's monotonic clock is the test's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import attrs
import pytest
from alerts_support import FakeMonotonic
from clusterpulse_alerts.backend import AlertsBackend
from clusterpulse_alerts.engine import Engine
from clusterpulse_alerts.plugin import contributed_rules
from clusterpulse_alerts.rules import register_builtin_rules
from clusterpulse_alerts.settings import RuleOverride, read_overrides
from clusterpulse_model import (
    Alert,
    ClusterOperatorInfo,
    ClusterStatusRecord,
    NodeCondition,
    NodeMetrics,
    OperatorInfo,
    RegistryStatusRecord,
    Taint,
)
from clusterpulse_model.alerting import AlertRuleDef
from clusterpulse_model.pieces import (
    AlertPiece,
    AlertResolution,
    ClusterDeletion,
    ClusterOperatorsPiece,
    ClusterStatusPiece,
    EventPiece,
    MetricSourceOutcomePiece,
    NodesPiece,
    OperatorsPiece,
    RegistryStatusPiece,
)
from clusterpulse_testing.recording import RecordingBackend

from clusterpulse_core.config import ConfigError
from clusterpulse_core.store import Store

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _definitions() -> dict[str, AlertRuleDef]:
    found: dict[str, AlertRuleDef] = {}

    def register(name: str, impl: object, /, **meta: object) -> None:
        found[name] = AlertRuleDef.from_registration(name, impl, "alerts", meta)

    register_builtin_rules(register)
    return found


@attrs.define
class Rig:
    engine: Engine
    backend: AlertsBackend
    recorder: RecordingBackend
    store: Store
    clock: FakeMonotonic

    def put(self, *pieces: object) -> None:
        self.store.put(*pieces)  # type: ignore[arg-type]

    def firing(self) -> set[tuple[str, str, str]]:
        return {(a.cluster, a.name, a.resource_name) for a in self.engine.firing()}

    def events(self) -> list[tuple[str, str]]:
        return [(e.type, e.data["name"] if e.data else "") for e in self.recorder.of(EventPiece)]


@pytest.fixture
def rig() -> Iterator[Rig]:
    clock = FakeMonotonic()
    engine = Engine(clock=lambda: NOW, monotonic=clock, restore_grace=60)
    for rule in contributed_rules(_definitions(), {}, default_for=-1):
        engine.set_rule(rule)
    backend = AlertsBackend(engine)
    recorder = RecordingBackend()
    store = Store([backend, recorder])
    backend.emit = store.put
    yield Rig(engine, backend, recorder, store, clock)
    store.close()


def _node(name: str, ready: str = "True", **extra: object) -> NodeMetrics:
    conditions = (NodeCondition("Ready", ready), *extra.pop("conditions", ()))  # type: ignore[misc]
    return NodeMetrics(name=name, conditions=conditions, **extra)  # type: ignore[arg-type]


def test_each_node_rule_fires_on_its_condition(rig: Rig) -> None:
    nodes = (
        _node("ok", cpu_allocatable=10, memory_allocatable=100),
        _node("down", "Unknown"),
        _node("mem", conditions=(NodeCondition("MemoryPressure", "True"),)),
        _node("disk", conditions=(NodeCondition("DiskPressure", "True"),)),
        _node("pid", conditions=(NodeCondition("PIDPressure", "True"), NodeCondition("DiskPressure", "False"))),
        _node("cordoned", status="SchedulingDisabled"),
        _node("tainted", taints=(Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),)),
    )
    rig.put(NodesPiece("c1", nodes))
    assert rig.firing() == {("c1", "NodeUnschedulable", "cordoned"), ("c1", "NodeUnschedulable", "tainted")}
    rig.clock.advance(60)
    rig.put(NodesPiece("c1", nodes))
    assert rig.firing() == {
        ("c1", "NodeUnschedulable", "cordoned"),
        ("c1", "NodeUnschedulable", "tainted"),
        ("c1", "NodeNotReady", "down"),
        ("c1", "NodeMemoryPressure", "mem"),
        ("c1", "NodeDiskPressure", "disk"),
        ("c1", "NodePIDPressure", "pid"),
    }
    fired = [e for e in rig.recorder.of(EventPiece) if e.type == "alert.fired"]
    assert len(fired) == 6 and all(e.target == "c1" for e in fired)


def test_requests_rule_uses_the_threshold_and_for(rig: Rig) -> None:
    busy = (_node("a", cpu_requested=9.5, cpu_allocatable=10, memory_requested=10, memory_allocatable=100),)
    rig.put(NodesPiece("c1", busy))
    rig.clock.advance(299)
    rig.put(NodesPiece("c1", busy))
    assert rig.firing() == set()
    rig.clock.advance(1)
    rig.put(NodesPiece("c1", busy))
    assert rig.firing() == {("c1", "ClusterCPURequestsHigh", "c1")}
    (alert,) = rig.engine.firing()
    assert alert.message == "CPU requests are 95.0% of allocatable on cluster c1 (limit 90%)"
    rig.put(NodesPiece("c1", (attrs.evolve(busy[0], cpu_requested=8.0),)))
    assert rig.firing() == set()
    assert rig.events() == [("alert.fired", "ClusterCPURequestsHigh"), ("alert.resolved", "ClusterCPURequestsHigh")]


def test_cluster_operator_olm_unreachable_and_metricsource_rules(rig: Rig) -> None:
    rig.put(
        ClusterOperatorsPiece(
            "c1",
            (
                ClusterOperatorInfo("dns", available=True),
                ClusterOperatorInfo("auth", available=False, degraded=True, message="no pods"),
                ClusterOperatorInfo("ingress", available=True, degraded=True),
            ),
        ),
        OperatorsPiece(
            "c1",
            (OperatorInfo("good", status="Succeeded"), OperatorInfo("bad", status="Failed", installed_namespace="ops")),
        ),
        ClusterStatusPiece("c2", ClusterStatusRecord("unhealthy", "connection refused")),
        MetricSourceOutcomePiece("ns/phases", collected=("c1",), failures={"c3": "forbidden"}),
    )
    rig.clock.advance(60)
    rig.backend.send(rig.engine.evaluate_all())
    assert rig.firing() == {
        ("c1", "ClusterOperatorDown", "auth"),
        ("c1", "ClusterOperatorDown", "ingress"),
        ("c1", "OperatorFailed", "bad"),
        ("c2", "ClusterUnreachable", "c2"),
        ("c3", "MetricSourceCollectionFailing", "phases"),
    }
    by_name = {a.resource_name: a for a in rig.engine.firing()}
    assert by_name["auth"].message == "ClusterOperator auth is unavailable and degraded: no pods"
    assert by_name["bad"].namespace == "ops"
    assert by_name["phases"].namespace == "ns"
    assert by_name["phases"].message == "MetricSource ns/phases cannot collect from cluster c3: forbidden"
    assert by_name["c2"].message == "cluster c2 is unreachable: connection refused"
    # The next run reaches c3: its alert resolves; c2 becomes healthy: its alert resolves.
    rig.put(
        MetricSourceOutcomePiece("ns/phases", collected=("c1", "c3")),
        ClusterStatusPiece("c2", ClusterStatusRecord("healthy", "Cluster is reachable")),
    )
    assert ("c3", "MetricSourceCollectionFailing", "phases") not in rig.firing()
    assert ("c2", "ClusterUnreachable", "c2") not in rig.firing()
    # Reached but unhealthy by its nodes (docs/readers.md#r7-health): not unreachable.
    rig.put(ClusterStatusPiece("c2", ClusterStatusRecord("unhealthy", "Issues: 2 nodes not ready")))
    rig.clock.advance(60)
    rig.backend.send(rig.engine.evaluate_all())
    assert ("c2", "ClusterUnreachable", "c2") not in rig.firing()


def test_registry_rules(rig: Rig) -> None:
    rig.put(
        RegistryStatusPiece("hub", RegistryStatusRecord(available=False, error="connection refused")),
        RegistryStatusPiece("slow", RegistryStatusRecord(available=True, response_time=7000)),
        RegistryStatusPiece("fast", RegistryStatusRecord(available=True, response_time=20)),
    )
    rig.clock.advance(60)
    rig.backend.send(rig.engine.evaluate_all())
    assert rig.firing() == {("hub", "RegistryUnavailable", "hub"), ("slow", "RegistryDegraded", "slow")}
    severities = {a.name: a.severity for a in rig.engine.firing()}
    assert severities == {"RegistryUnavailable": "critical", "RegistryDegraded": "warning"}


def test_refresh_on_store_not_on_tick_and_no_reprocessing(rig: Rig) -> None:
    down = (_node("n", "False"),)
    rig.put(NodesPiece("c1", down))
    rig.clock.advance(60)
    rig.backend.send(rig.engine.evaluate_all())
    assert len(rig.recorder.of(AlertPiece)) == 1
    rig.backend.send(rig.engine.evaluate_all())  # a tick: nothing changed, nothing written
    assert len(rig.recorder.of(AlertPiece)) == 1
    rig.put(NodesPiece("c1", down))  # a reconcile: the hash is refreshed (TTL), same id, no new event
    pieces = rig.recorder.of(AlertPiece)
    assert len(pieces) == 2 and pieces[0].alert == pieces[1].alert
    assert rig.events() == [("alert.fired", "NodeNotReady")]


def test_undecided_rules_keep_alerts_and_deletion_drops_them(rig: Rig) -> None:
    rig.put(NodesPiece("c1", (_node("n", "False"),)))
    rig.clock.advance(60)
    rig.backend.send(rig.engine.evaluate_all())
    # A status-only store: node rules cannot tell anything new, the alert stays.
    rig.put(ClusterStatusPiece("c1", ClusterStatusRecord("healthy")))
    assert rig.firing() == {("c1", "NodeNotReady", "n")}
    rig.recorder.clear()
    rig.put(ClusterDeletion("c1"))
    assert rig.firing() == set()
    assert [type(p) for p in rig.recorder.pieces if not isinstance(p, ClusterDeletion)] == [AlertResolution]
    assert rig.recorder.of(EventPiece) == []


def test_restored_alerts_are_kept_and_resolve_without_a_second_fired_event(rig: Rig) -> None:
    rig.put(NodesPiece("c1", (_node("n", "False"),)))
    rig.clock.advance(60)
    rig.backend.send(rig.engine.evaluate_all())
    (alert,) = rig.engine.firing()
    orphan = attrs.evolve(alert, id="Gone-0123456789abcdef", rule="AlertRule/ns/gone", name="gone")

    clock = FakeMonotonic()
    engine = Engine(clock=lambda: NOW, monotonic=clock, restore_grace=60)
    for rule in rig.engine.rules.values():
        engine.set_rule(rule)
    engine.restore([alert, orphan])
    assert engine.evaluate("cluster", "c1") == []  # no view yet
    engine.update_cluster("c1", nodes=(_node("n", "False"),))
    out = engine.evaluate("cluster", "c1", refresh=False)
    assert out == []  # still firing, already announced; the orphan's rule may load later
    clock.advance(60)
    out = engine.evaluate("cluster", "c1", refresh=False)
    assert [(type(p).__name__, getattr(p, "type", "")) for p in out] == [
        ("AlertResolution", ""),
        ("EventPiece", "alert.resolved"),
    ]
    assert out[0].alert == orphan  # type: ignore[attr-defined]


def test_rule_table_validation_names_the_key() -> None:
    assert read_overrides({"NodeNotReady": {"for": 30, "enabled": True}}) == {
        "NodeNotReady": RuleOverride(enabled=True, for_seconds=30.0)
    }
    for table, message in (
        ({"X": {"for": -1}}, "plugins.alerts.rules.X.for: expected a value >= 0"),
        ({"X": {"threshold": "high"}}, "plugins.alerts.rules.X.threshold: expected number"),
        ({"X": {"severity": "page"}}, "plugins.alerts.rules.X.severity: expected one of critical"),
        ({"X": {"enable": False}}, "plugins.alerts.rules.X.enable: unknown key"),
        ({"X": 3}, "plugins.alerts.rules.X: expected a table"),
    ):
        with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
            read_overrides(table)
    with pytest.raises(ConfigError, match="no alert rule named 'NodeNotReadyy'"):
        contributed_rules(_definitions(), {"NodeNotReadyy": RuleOverride()}, -1)


def test_a_bad_registration_names_the_rule() -> None:
    with pytest.raises(ValueError, match="alert rule 'X': severity must be"):
        AlertRuleDef.from_registration("X", lambda v, t: [], "p", {"severity": "page"})
    with pytest.raises(ValueError, match="alert rule 'X': unknown option"):
        AlertRuleDef.from_registration("X", lambda v, t: [], "p", {"for": 3})


def test_alert_ids_are_stable_and_key_safe(rig: Rig) -> None:
    rig.put(NodesPiece("c1", (_node("weird name/with:colon", status="SchedulingDisabled"),)))
    (first,) = rig.engine.firing()
    assert first.id.startswith("NodeUnschedulable-") and ":" not in first.id and " " not in first.id
    engine = Engine(clock=lambda: NOW)
    for rule in rig.engine.rules.values():
        engine.set_rule(rule)
    engine.update_cluster("c1", nodes=(_node("weird name/with:colon", status="SchedulingDisabled"),))
    engine.evaluate("cluster", "c1")
    assert [a.id for a in engine.firing()] == [first.id]
    assert isinstance(first, Alert)
