"""Malformed AlertRules, as data: each case is a spec change and the field its error must name.

The AlertRule part of the malformed-CR corpus (the alerts plugin's kind). Every case is applied
to a rule that fired first on an emulated cluster: the reconcile must not raise, the status must
be ``phase: Error`` naming the field, the alert the last good rule stored stays firing, and the
good spec is ``Ready`` again. Each case is also created through the API server emulator serving
the real CRD: refused (422 naming the field) exactly when the CRD schema can refuse it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_alerts.crd import ALERT_RULE
from fault_support import HUB_NAMESPACE, TOKEN, add_cluster, corpus_object, make_hub, managed_objects
from malformed_corpus import Case, Corpus, api_server_verdict, check_malformed, crd_hub_fixture

from clusterpulse_core.context import Runtime
from clusterpulse_core.runtime.bootstrap import reconcile_object

GOOD: dict[str, Any] = {
    "condition": "nodes >= 1",
    "severity": "warning",
    "for": "0s",
    "message": "{cluster} has {nodes} nodes",
    "clusterSelector": {"matchLabels": {"env": "prod"}},
}
CORPUS = Corpus(ALERT_RULE, "alerts", "big", GOOD, healthy="Ready")
SELECTOR = "spec.clusterSelector"


def _expression(**item: Any) -> dict[str, Any]:
    return {"clusterSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"], **item}]}}


ALERT_RULE_CASES: list[Case] = [
    ("spec not an object", {"__spec__": "nope"}, "spec"),
    ("condition missing", {"__spec__": {"severity": "warning"}}, "spec.condition"),
    ("condition not a string", {"condition": 42}, "spec.condition"),
    ("condition empty", {"condition": ""}, "spec.condition"),
    ("condition huge", {"condition": "nodes > " + "1" * 100_000}, "spec.condition"),
    ("condition syntax error", {"condition": "nodes >"}, "spec.condition"),
    ("condition unknown metric", {"condition": "nodes_redy < nodes"}, "spec.condition"),
    ("condition unknown function", {"condition": "nope(nodes) > 1"}, "spec.condition"),
    ("severity urgent", {"severity": "urgent"}, "spec.severity"),
    ("severity a number", {"severity": 1}, "spec.severity"),
    ("severity empty", {"severity": ""}, "spec.severity"),
    ("for a number", {"for": 30}, "spec.for"),
    ("for a boolean", {"for": True}, "spec.for"),
    ("for soon", {"for": "soon"}, "spec.for"),
    ("for negative", {"for": "-5s"}, "spec.for"),
    ("for empty", {"for": ""}, "spec.for"),
    ("for 1000 hours", {"for": "1000h"}, "spec.for"),
    ("message not a string", {"message": 5}, "spec.message"),
    ("message huge", {"message": "m" * 100_000}, "spec.message"),
    ("alertName not a string", {"alertName": ["a"]}, "spec.alertName"),
    ("alertName empty", {"alertName": ""}, "spec.alertName"),
    ("alertName huge", {"alertName": "a" * 1000}, "spec.alertName"),
    ("clusterSelector not an object", {"clusterSelector": "env=prod"}, SELECTOR),
    ("matchLabels not an object", {"clusterSelector": {"matchLabels": ["env"]}}, f"{SELECTOR}.matchLabels"),
    ("matchLabels value a number", {"clusterSelector": {"matchLabels": {"env": 1}}}, f"{SELECTOR}.matchLabels.env"),
    (
        "too many matchLabels",
        {"clusterSelector": {"matchLabels": {f"k{i}": "v" for i in range(65)}}},
        f"{SELECTOR}.matchLabels",
    ),
    (
        "matchLabels value huge",
        {"clusterSelector": {"matchLabels": {"env": "v" * 2000}}},
        f"{SELECTOR}.matchLabels.env",
    ),
    (
        "matchExpressions not a list",
        {"clusterSelector": {"matchExpressions": {"key": "env"}}},
        f"{SELECTOR}.matchExpressions",
    ),
    ("operator Near", _expression(operator="Near"), f"{SELECTOR}.matchExpressions[0].operator"),
    (
        "key missing",
        {"clusterSelector": {"matchExpressions": [{"operator": "Exists"}]}},
        f"{SELECTOR}.matchExpressions[0].key",
    ),
    ("In without values", _expression(values=[]), f"{SELECTOR}.matchExpressions[0].values"),
    ("Exists with values", _expression(operator="Exists"), f"{SELECTOR}.matchExpressions[0].values"),
    ("value a number", _expression(values=[1]), f"{SELECTOR}.matchExpressions[0].values[0]"),
]
IDS = [case[0] for case in ALERT_RULE_CASES]


@pytest.fixture
def firing(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Iterator[Any]:
    hub = make_hub(kube_api, ALERT_RULE)
    cluster = kube_api(objects=managed_objects("node-a"), require_token=TOKEN)
    add_cluster(hub, "east", cluster.url, labels={"env": "prod"})

    def connect(runtime: Runtime) -> None:
        owner, kind = runtime.plugins.kinds["ClusterConnection"]
        assert reconcile_object(runtime, owner, kind, hub.get(kind.api_version, kind.plural, "east", HUB_NAMESPACE)).ok

    plugins = ("redis", "cluster", "metricsource", "alerts")
    with corpus_object(CORPUS, hub, redis_url, tmp_path, plugins, connect) as running:
        yield running


crd_hub = crd_hub_fixture(ALERT_RULE)


def _alerts(client: Any) -> dict[str, dict[str, str]]:
    return {key: client.hgetall(key) for key in client.scan_iter(match="alerts:east:*")}


@pytest.mark.parametrize("case", ALERT_RULE_CASES, ids=IDS)
def test_a_malformed_alert_rule_is_an_error_naming_its_field(firing: Any, case: Case) -> None:
    reconcile, client = firing
    [alert] = _alerts(client).values()
    assert alert["message"] == "east has 1 nodes"
    check_malformed(CORPUS, reconcile, case, lambda: _alerts(client))


@pytest.mark.parametrize("case", ALERT_RULE_CASES, ids=IDS)
def test_the_api_server_refuses_what_the_crd_schema_can(crd_hub: Any, case: Case) -> None:
    api_server_verdict(crd_hub, CORPUS, case)


def test_a_repeating_failure_is_logged_once_per_change(firing: Any, caplog: pytest.LogCaptureFixture) -> None:
    reconcile, _ = firing
    caplog.set_level("WARNING")
    for spec in ({**GOOD, "severity": "urgent"},) * 3 + ({**GOOD, "for": "soon"},) * 2:
        assert reconcile(spec)[0]["phase"] == "Error"
    logged = [r.getMessage() for r in caplog.records if "invalid AlertRule" in r.getMessage()]
    print(f"\n{logged}")
    assert len(logged) == 2 and "spec.severity" in logged[0] and "spec.for" in logged[1]
