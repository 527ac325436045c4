"""Malformed custom resources, as data: each case is a spec and the field its error must name.

Every case is applied to a ClusterConnection that was reconciled successfully first: the
reconcile must not raise, the status must be ``phase: Error`` naming the field, and what was
stored from the last good reconcile must still be there. A value the reconcile adjusts (an
interval below 30) is admitted, and the status says it was adjusted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from fault_support import CC_API, HUB_NAMESPACE, TOKEN, add_cluster, make_hub, managed_objects, write_config
from malformed_corpus import Corpus, api_server_verdict, crd_hub_fixture

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins

#: (case id, spec changes, field the error names). ``None`` removes the key.
CLUSTER_CONNECTION_CASES: list[tuple[str, Mapping[str, Any], str]] = [
    ("empty endpoint", {"endpoint": ""}, "spec.endpoint"),
    ("endpoint not a URL", {"endpoint": "ftp://a b"}, "spec.endpoint"),
    ("endpoint without host", {"endpoint": "https://"}, "spec.endpoint"),
    ("huge endpoint", {"endpoint": "https://" + "e" * 900_000}, "spec.endpoint"),
    ("endpoint not a string", {"endpoint": 42}, "spec.endpoint"),
    ("empty credentialsRef name", {"credentialsRef": {"name": ""}}, "spec.credentialsRef.name"),
    ("credentialsRef name with a path", {"credentialsRef": {"name": "../x"}}, "credentialsRef"),
    ("long displayName", {"displayName": "d" * 300}, "spec.displayName"),
    ("too many labels", {"labels": {f"k{i}": "v" for i in range(65)}}, "spec.labels"),
    ("long label value", {"labels": {"team": "v" * 2000}}, "spec.labels.team"),
    ("labels not strings", {"labels": {"team": {"a": 1}}}, "spec.labels"),
    ("interval negative", {"monitoring": {"interval": -5}}, "spec.monitoring.interval"),
    ("interval huge", {"monitoring": {"interval": 10**12}}, "spec.monitoring.interval"),
    ("interval not a number", {"monitoring": {"interval": "abc"}}, "spec.monitoring.interval"),
    ("timeout negative", {"monitoring": {"timeout": -1}}, "spec.monitoring.timeout"),
    ("timeout huge", {"monitoring": {"timeout": 999_999}}, "spec.monitoring.timeout"),
    ("push without ingesterAddress", {"collectionMode": "push"}, "spec.ingesterAddress"),
    ("ingesterAddress a URL", {"ingesterAddress": "https://hub:9443/x"}, "spec.ingesterAddress"),
    ("ingesterAddress port out of range", {"ingesterAddress": "hub:99999"}, "spec.ingesterAddress"),
    ("collectorVersion not a tag", {"collectorVersion": "v1; rm -rf"}, "spec.collectorVersion"),
    ("spec not an object", {"__spec__": "nope"}, "spec"),
]


@pytest.fixture
def connected(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Any:
    hub = make_hub(kube_api)
    cluster = kube_api(objects=managed_objects("node-a", "node-b"), require_token=TOKEN)
    add_cluster(hub, "c0", cluster.url)
    config, host = load(str(write_config(tmp_path / "config.toml", redis_url)), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    start_plugins(runtime)
    owner, kind = runtime.plugins.kinds["ClusterConnection"]
    good = hub.get(CC_API, kind.plural, "c0", HUB_NAMESPACE)

    def reconcile(spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
        current = hub.get(CC_API, kind.plural, "c0", HUB_NAMESPACE)
        obj = {**current, "spec": good["spec"] if spec is None else spec}
        outcome = reconcile_object(runtime, owner, kind, obj)
        assert outcome.detail is None or "Traceback" not in outcome.detail
        return dict(hub.get(CC_API, kind.plural, "c0", HUB_NAMESPACE).get("status") or {})

    try:
        assert reconcile()["phase"] == "Connected"
        yield good, reconcile, client
    finally:
        stop_plugins(runtime)
        client.close()


@pytest.mark.parametrize(
    ("case", "changes", "field"), CLUSTER_CONNECTION_CASES, ids=[case[0] for case in CLUSTER_CONNECTION_CASES]
)
def test_a_malformed_cluster_connection_is_an_error_naming_its_field(
    connected: Any, case: str, changes: Mapping[str, Any], field: str
) -> None:
    good, reconcile, client = connected
    spec: Any = changes["__spec__"] if "__spec__" in changes else {**good["spec"], **changes}
    status = reconcile(spec)
    print(f"\n{case}: {status.get('phase')}: {str(status.get('message'))[:160]}")
    assert status["phase"] == "Error"
    assert field in status["message"]
    assert len(status["message"]) <= 1100
    # What the last good reconcile stored is kept.
    assert client.smembers("cluster:c0:nodes") == {"node-a", "node-b"}
    assert json.loads(client.get("cluster:c0:metrics") or "{}").get("nodes") == 2
    # And the good spec reconciles again.
    assert reconcile()["phase"] == "Connected"


def test_an_interval_below_the_minimum_is_raised_and_the_status_says_so(connected: Any) -> None:
    good, reconcile, _ = connected
    status = reconcile({**good["spec"], "monitoring": {"interval": 10}})
    assert status["phase"] == "Connected"
    assert "spec.monitoring.interval 10 raised to 30" in status["message"]
    assert "raised" not in reconcile()["message"]


#: The spec the cases change, as ``add_cluster`` writes it.
CORPUS = Corpus(
    CLUSTER_CONNECTION, "cluster", "c0", {"endpoint": "https://127.0.0.1:6443", "credentialsRef": {"name": "c0-token"}}
)


crd_hub = crd_hub_fixture(CLUSTER_CONNECTION)


@pytest.mark.parametrize("case", CLUSTER_CONNECTION_CASES, ids=[case[0] for case in CLUSTER_CONNECTION_CASES])
def test_the_api_server_refuses_what_the_crd_schema_can(crd_hub: Any, case: tuple[str, Mapping[str, Any], str]) -> None:
    api_server_verdict(crd_hub, CORPUS, case)


def test_a_repeating_failure_is_logged_once_per_change(connected: Any, caplog: pytest.LogCaptureFixture) -> None:
    good, reconcile, _ = connected
    caplog.set_level("WARNING")
    huge = {**good["spec"], "endpoint": "https://" + "e" * 900_000}
    negative = {**good["spec"], "monitoring": {"interval": -5}}
    for spec in (huge,) * 3 + (negative,) * 2:
        assert reconcile(spec)["phase"] == "Error"
    logged = [r.getMessage() for r in caplog.records if r.levelno >= 30 and "spec." in r.getMessage()]
    print(f"\n{len(logged)} lines: {[line[:120] for line in logged]}")
    assert len(logged) == 2
    assert "spec.endpoint" in logged[0] and "spec.monitoring.interval" in logged[1]
    assert all(len(line) <= 4096 + 100 for line in logged)
