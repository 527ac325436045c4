"""Malformed MonitorAccessPolicies, as data: each case is a spec change and the field its error must name.

The MonitorAccessPolicy part of the malformed-CR corpus (test_malformed_crs.py holds the
ClusterConnection part). Every case is applied to a policy compiled and stored first: the reconcile
must not raise, the status must be ``state: Error`` naming the field, the compiled policy the last
good reconcile stored stays in Redis, and the good spec is ``Active`` again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_policy.kind import MONITOR_ACCESS_POLICY
from fault_support import HUB_NAMESPACE, corpus_object, make_hub
from malformed_corpus import Case, Corpus, api_server_verdict, check_malformed, crd_hub_fixture

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
CORPUS = Corpus(MONITOR_ACCESS_POLICY, "policy", "p1", GOOD, state="state", fails=False)


def _rule(**changes: Any) -> dict[str, Any]:
    return {"scope": {"clusters": {"default": "none", "rules": [{**RULE, **changes}]}}}


def _resource(**changes: Any) -> dict[str, Any]:
    return _rule(resources=[{**RULE["resources"][0], **changes}])


POLICY_CASES: list[Case] = [
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


IDS = [case[0] for case in POLICY_CASES]


@pytest.fixture
def compiled(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Iterator[Any]:
    hub = make_hub(kube_api, MONITOR_ACCESS_POLICY)
    with corpus_object(CORPUS, hub, redis_url, tmp_path, ("redis", "policy")) as running:
        yield running


crd_hub = crd_hub_fixture(MONITOR_ACCESS_POLICY)


@pytest.mark.parametrize("case", POLICY_CASES, ids=IDS)
def test_a_malformed_policy_is_an_error_naming_its_field(compiled: Any, case: Case) -> None:
    reconcile, client = compiled
    key = f"policy:{HUB_NAMESPACE}:p1"
    assert "alice" in client.hget(key, "data")
    check_malformed(CORPUS, reconcile, case, lambda: client.hget(key, "data"))


@pytest.mark.parametrize("case", POLICY_CASES, ids=IDS)
def test_the_api_server_refuses_what_the_crd_schema_can(crd_hub: Any, case: Case) -> None:
    api_server_verdict(crd_hub, CORPUS, case)
