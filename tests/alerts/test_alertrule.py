"""The AlertRule kind under the real Manager: a condition over a MetricSource aggregation and the metrics."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from alerts_support import (
    GROUP_VERSION,
    NAMESPACE,
    WAIT,
    EventTap,
    alert_hashes,
    alert_rule,
    cactus,
    cactus_crd,
    cluster_connection,
    cycle,
    hub_api,
    managed_objects,
    secret,
    start_controller,
)
from clusterpulse_alerts import alertrule
from clusterpulse_testing.polling import eventually

PLUGINS = ("redis", "cluster", "metricsource", "alerts")
POD_PHASES = {
    "source": {"apiVersion": "botany.example.io/v1", "kind": "Cactus"},
    "fields": [{"name": "phase", "path": ".status.phase"}],
    "aggregations": [{"name": "by_phase", "function": "count", "groupBy": "phase"}],
    "collection": {"intervalSeconds": 30},
}
FAILED_CACTI = {
    "clusterSelector": {"matchLabels": {"env": "prod"}},
    "condition": "agg('pod-phases', 'by_phase', 'Failed') > 0 && nodes >= 2",
    "severity": "warning",
    "for": "0s",
    "message": "failed cacti on {cluster} ({nodes} nodes)",
}


def _rule_status(hub: Any, name: str) -> dict[str, Any]:
    return hub.get(GROUP_VERSION, "alertrules", name, NAMESPACE).get("status") or {}


def test_alert_rule_over_an_aggregation_fires_on_selected_clusters_and_resolves(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = hub_api(kube_api)
    prod = kube_api(objects=managed_objects(cactus_crd(), cactus("saguaro", "Failed"), cactus("barrel", "Blooming")))
    dev = kube_api(objects=managed_objects(cactus_crd(), cactus("saguaro", "Failed")))
    for name, api, labels in (("prod", prod, {"env": "prod"}), ("dev", dev, {"env": "dev"})):
        hub.create(secret(f"{name}-token"))
        hub.create(cluster_connection(name, api.url, labels))
    client = redis.Redis.from_url(redis_url)
    tap = EventTap(client)
    controller = start_controller(hub, redis_url, tmp_path, PLUGINS)
    try:
        eventually(
            lambda: all(
                (hub.get(GROUP_VERSION, "clusterconnections", c, NAMESPACE).get("status") or {}).get("phase")
                == "Connected"
                for c in ("prod", "dev")
            ),
            "connected clusters",
            timeout=WAIT,
        )
        hub.create(
            {
                "apiVersion": GROUP_VERSION,
                "kind": "MetricSource",
                "metadata": {"name": "pod-phases", "namespace": NAMESPACE},
                "spec": POD_PHASES,
            }
        )
        eventually(
            lambda: client.exists(f"cluster:prod:custom:{NAMESPACE}/pod-phases:aggregations"),
            "the aggregation",
            timeout=WAIT,
        )
        hub.create(alert_rule("failed-cacti", FAILED_CACTI))

        fired = eventually(lambda: alert_hashes(client, "prod"), "the AlertRule's alert", timeout=WAIT)
        ((alert_id, fields),) = fired.items()
        assert fields["name"] == "failed-cacti"
        assert fields["severity"] == "warning"
        assert fields["source"] == f"AlertRule {NAMESPACE}/failed-cacti"
        assert fields["resource_type"] == "cluster" and fields["resource_name"] == "prod"
        assert fields["message"] == "failed cacti on prod (2 nodes)"
        assert alert_hashes(client, "dev") == {}  # not selected
        status = eventually(
            lambda: _rule_status(hub, "failed-cacti").get("firingClusters") == 1 and _rule_status(hub, "failed-cacti"),
            "the rule's status",
            timeout=WAIT,
        )
        assert status["phase"] == "Ready"
        assert status["firing"] == ["prod"]

        saguaro = prod.get(cactus("saguaro", "")["apiVersion"], "cacti", "saguaro", "garden")
        saguaro["status"] = {"phase": "Blooming"}
        prod.update(saguaro)
        cycle(controller.manager, "metricsource")
        eventually(lambda: not alert_hashes(client, "prod"), "the resolution", timeout=WAIT)
        eventually(
            lambda: _rule_status(hub, "failed-cacti").get("firingClusters") == 0, "the status after", timeout=WAIT
        )
        events = [
            (e["type"], e["data"]["id"])
            for e in eventually(lambda: len(tap.drain()) >= 2 and tap.seen, "the events", timeout=WAIT)
        ]
        assert events == [("alert.fired", alert_id), ("alert.resolved", alert_id)]
    finally:
        controller.stop()
        tap.close()
        client.close()


def test_invalid_alert_rules_get_phase_error_with_the_position(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = hub_api(kube_api)
    controller = start_controller(hub, redis_url, tmp_path, PLUGINS)
    try:
        hub.create(alert_rule("syntax", {"condition": "nodes >"}))
        hub.create(alert_rule("typo", {"condition": "nodes_redy < nodes"}))
        hub.create(alert_rule("function", {"condition": "nope(nodes) > 1"}))
        syntax = eventually(
            lambda: _rule_status(hub, "syntax").get("phase") and _rule_status(hub, "syntax"),
            "the syntax error",
            timeout=WAIT,
        )
        assert syntax["phase"] == "Error"
        assert syntax["message"].startswith("spec.condition: ")
        assert syntax["errorPosition"] == 7
        typo = eventually(
            lambda: _rule_status(hub, "typo").get("phase") and _rule_status(hub, "typo"), "the typo", timeout=WAIT
        )
        assert typo["phase"] == "Error" and typo["errorPosition"] == 0
        assert "unknown metric 'nodes_redy'" in typo["message"]
        function = eventually(
            lambda: _rule_status(hub, "function").get("phase") and _rule_status(hub, "function"),
            "the unknown function",
            timeout=WAIT,
        )
        assert function["phase"] == "Error" and "nope" in function["message"]
        assert function["errorPosition"] == 0
    finally:
        controller.stop()


class _WatchedPattern:
    """The duration pattern, recording the length of every text it is asked to search."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.searched: list[int] = []

    def findall(self, text: str) -> list[Any]:
        self.searched.append(len(text))
        return self.pattern.findall(text)


def test_a_duration_longer_than_its_limit_is_refused_before_it_is_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    watched = _WatchedPattern(alertrule._DURATION)
    monkeypatch.setattr(alertrule, "_DURATION", watched)
    hostile = "1s" * (512 * 1024)  # 1 MiB of a valid-looking duration

    with pytest.raises(alertrule.RuleError) as refused:
        alertrule.parse_duration(hostile)

    assert watched.searched == [], "the hostile text never reached the regex"
    assert refused.value.field == "spec.for"
    assert f"longer than {alertrule.MAX_DURATION_LENGTH} characters ({len(hostile)})" in str(refused.value)
    assert alertrule.parse_duration("1h30m") == 5400.0 and watched.searched == [5], "a short one is searched"
