"""Malformed MonitorAccessPolicies, as data: each case is a spec change and the field its error must name.

The MonitorAccessPolicy part of the malformed-CR corpus (test_malformed_crs.py holds the
ClusterConnection part). Every case is applied to a policy compiled and stored first: the reconcile
must not raise, the status must be ``state: Error`` naming the field, the compiled policy the last
good reconcile stored stays in Redis, and the good spec is ``Active`` again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
from clusterpulse_policy.kind import MONITOR_ACCESS_POLICY
from fault_support import HUB_NAMESPACE, make_hub, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins

API = MONITOR_ACCESS_POLICY.api_version
RULE: dict[str, Any] = {
    "selector": {"matchPattern": "prod-*"},
    "permissions": {"view": True},
    "resources": [{"type": "nodes", "visibility": "filtered", "filters": {"namespaces": {"allowed": ["team-*"]}}}],
}
GOOD: dict[str, Any] = {
    "identity": {
        "subjects": {"users": ["alice"], "groups": ["dev"], "serviceAccounts": [{"name": "bot"}]},
        "priority": 100,
    },
    "access": {"effect": "Allow", "enabled": True},
    "scope": {"clusters": {"default": "none", "rules": [RULE]}},
}


def _with(**changes: Any) -> dict[str, Any]:
    return {**GOOD, **changes}


def _rule(**changes: Any) -> dict[str, Any]:
    return {"scope": {"clusters": {"default": "none", "rules": [{**RULE, **changes}]}}}


def _resource(**changes: Any) -> dict[str, Any]:
    return _rule(resources=[{**RULE["resources"][0], **changes}])


#: (case id, spec changes, field the error names). ``__spec__`` replaces the whole spec.
POLICY_CASES: list[tuple[str, Mapping[str, Any], str]] = [
    ("users not a list", {"identity": {"subjects": {"users": "alice"}}}, "spec.identity.subjects.users"),
    ("user not a string", {"identity": {"subjects": {"users": [42]}}}, "spec.identity.subjects.users[0]"),
    ("huge user", {"identity": {"subjects": {"users": ["u" * 100_000]}}}, "spec.identity.subjects.users[0]"),
    (
        "too many groups",
        {"identity": {"subjects": {"groups": [f"g{i}" for i in range(1001)]}}},
        "spec.identity.subjects.groups",
    ),
    (
        "serviceAccount not an object",
        {"identity": {"subjects": {"serviceAccounts": ["bot"]}}},
        "spec.identity.subjects.serviceAccounts[0]",
    ),
    ("priority a string", {"identity": {"subjects": {"users": ["a"]}, "priority": "100"}}, "spec.identity.priority"),
    ("priority a float", {"identity": {"subjects": {"users": ["a"]}, "priority": 1.5}}, "spec.identity.priority"),
    (
        "priority out of range",
        {"identity": {"subjects": {"users": ["a"]}, "priority": 10**9}},
        "spec.identity.priority",
    ),
    ("effect maybe", {"access": {"effect": "Maybe"}}, "spec.access.effect"),
    ("effect not a string", {"access": {"effect": 1}}, "spec.access.effect"),
    ("enabled a string", {"access": {"effect": "Allow", "enabled": "false"}}, "spec.access.enabled"),
    ("access not an object", {"access": "Allow"}, "spec.access"),
    ("default cluster access bad", {"scope": {"clusters": {"default": "sometimes"}}}, "spec.scope.clusters.default"),
    ("rules not a list", {"scope": {"clusters": {"rules": {"a": 1}}}}, "spec.scope.clusters.rules"),
    (
        "matchPattern too long",
        _rule(selector={"matchPattern": "p" * 300}),
        "spec.scope.clusters.rules[0].selector.matchPattern",
    ),
    (
        "matchLabels value a number",
        _rule(selector={"matchLabels": {"env": 1}}),
        "spec.scope.clusters.rules[0].selector.matchLabels.env",
    ),
    ("view a string", _rule(permissions={"view": "yes"}), "spec.scope.clusters.rules[0].permissions.view"),
    ("resource type empty", _resource(type=""), "spec.scope.clusters.rules[0].resources[0].type"),
    ("visibility bad", _resource(visibility="some"), "spec.scope.clusters.rules[0].resources[0].visibility"),
    (
        "allowed namespaces not a list",
        _resource(filters={"namespaces": {"allowed": "team-*"}}),
        "spec.scope.clusters.rules[0].resources[0].filters.namespaces.allowed",
    ),
    (
        "aggregations include a number",
        _resource(aggregations={"include": [1]}),
        "spec.scope.clusters.rules[0].resources[0].aggregations.include[0]",
    ),
    ("notAfter a number", {"lifecycle": {"validity": {"notAfter": 1700000000}}}, "spec.lifecycle.validity.notAfter"),
    ("spec not an object", {"__spec__": "nope"}, "spec"),
]


@pytest.fixture
def compiled(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Any:
    hub = make_hub(kube_api, MONITOR_ACCESS_POLICY)
    config, host = load(str(write_config(tmp_path / "config.toml", redis_url, enabled=("redis", "policy"))), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    start_plugins(runtime)
    hub.create(
        {
            "apiVersion": API,
            "kind": "MonitorAccessPolicy",
            "metadata": {"name": "p1", "namespace": HUB_NAMESPACE},
            "spec": GOOD,
        }
    )

    def reconcile(spec: Any = None) -> tuple[dict[str, Any], Any]:
        current = hub.get(API, MONITOR_ACCESS_POLICY.plural, "p1", HUB_NAMESPACE)
        outcome = reconcile_object(
            runtime, "policy", MONITOR_ACCESS_POLICY, {**current, "spec": GOOD if spec is None else spec}
        )
        assert "Traceback" not in (outcome.detail or "")
        return dict(hub.get(API, MONITOR_ACCESS_POLICY.plural, "p1", HUB_NAMESPACE).get("status") or {}), outcome

    try:
        status, _ = reconcile()
        assert status["state"] == "Active", status
        yield reconcile, client
    finally:
        stop_plugins(runtime)
        client.close()


@pytest.mark.parametrize(("case", "changes", "field"), POLICY_CASES, ids=[case[0] for case in POLICY_CASES])
def test_a_malformed_policy_is_an_error_naming_its_field(
    compiled: Any, case: str, changes: Mapping[str, Any], field: str
) -> None:
    reconcile, client = compiled
    key = f"policy:{HUB_NAMESPACE}:p1"
    stored = client.hget(key, "data")
    assert stored and "alice" in stored
    spec: Any = changes.get("__spec__", _with(**changes))
    status, _ = reconcile(spec)
    print(f"\n{case}: {status.get('state')}: {str(status.get('message'))[:160]}")
    assert status["state"] == "Error"
    assert field in status["message"]
    assert len(status["message"]) <= 1100
    # What the last good reconcile stored is kept.
    assert client.hget(key, "data") == stored
    # And the good spec reconciles again.
    assert reconcile()[0]["state"] == "Active"
