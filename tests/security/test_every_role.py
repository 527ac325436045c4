"""Finding 2, every role: no RBAC ClusterPulse generates grants a wildcard, none installed on a managed
cluster can read Secrets, and the agent's names no Secret at all, whatever the MetricSources ask for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from clusterpulse_cluster.agent_deploy.objects import ClusterRole, Owner, to_wire
from clusterpulse_cluster.agent_deploy.plan import AgentPlan

from clusterpulse_core import rbac
from clusterpulse_core.runtime.bootstrap import load

CONFIG = Path(__file__).parents[2] / "deploy" / "base" / "clusterpulse.toml"
READ = {"get", "list", "watch"}
#: What MetricSources could make the agent read: Secrets in every spelling, wildcards, and a real type.
ASKED = (
    ("", "secrets"),
    ("", "Secrets"),
    ("", "SECRETS "),
    ("", "secrets/status"),
    ("*", "pods"),
    ("apps", "*"),
    ("*", "*"),
    ("batch", "jobs"),
)


def _generated() -> dict[str, list[dict[str, Any]]]:
    """Every role ClusterPulse generates, by where it is installed: ``hub`` and ``managed`` (the agent's too)."""
    config, host = load(str(CONFIG), env={})
    kinds = [kind for _owner, kind in host.kinds.values()]
    extra = [rbac.parse_read(text) for text in ("apps/replicasets", "batch/jobs", "configmaps")]
    sharded = attrs.evolve(config.core, sharding=True)
    hub = [
        *rbac.hub_manifests(kinds, config.core),
        *rbac.hub_manifests(kinds, sharded),
        *rbac.cross_namespace_manifests(kinds, config.core),
    ]
    managed = [*rbac.managed_manifests(kinds, extra), *rbac.managed_manifests(kinds, extra, push=True)]
    plan = AgentPlan(
        owner=Owner("clusterpulse", "east"),
        cluster_name="east",
        ingester_address="ingester:9443",
        token="t",
        image="clusterpulse-collector",
        version="1",
        read_types=ASKED,
    )
    agent = [to_wire(obj) for _step, obj in plan.objects() if isinstance(obj, ClusterRole)]
    roles = {"hub": hub, "managed": managed, "agent": agent}
    return {where: [doc for doc in docs if doc["kind"] in ("Role", "ClusterRole")] for where, docs in roles.items()}


def _names(rule: dict[str, Any]) -> list[str]:
    return [
        *rule.get("apiGroups", ()),
        *rule.get("resources", ()),
        *rule.get("verbs", ()),
        *rule.get("resourceNames", ()),
    ]


def test_every_generated_role_is_checked() -> None:
    roles = _generated()
    assert {where: len(docs) for where, docs in roles.items()} == {"hub": 3, "managed": 3, "agent": 1}
    agent_resources = {
        (group, resource)
        for rule in roles["agent"][0]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert ("batch", "jobs") in agent_resources, "the agent still gets what a MetricSource may read"


@pytest.mark.parametrize("where", ["hub", "managed", "agent"])
def test_no_generated_role_grants_a_wildcard(where: str) -> None:
    for role in _generated()[where]:
        for rule in role["rules"]:
            assert not [name for name in _names(rule) if "*" in name], (role["metadata"], rule)
            if "nonResourceURLs" in rule:  # discovery paths (/api/*) only, read-only
                assert set(rule["verbs"]) == {"get"}, rule


@pytest.mark.parametrize("where", ["managed", "agent"])
def test_no_role_on_a_managed_cluster_reads_secrets(where: str) -> None:
    for role in _generated()[where]:
        for rule in role["rules"]:
            secrets = [r for r in rule.get("resources", ()) if r.strip().lower().partition("/")[0] == "secrets"]
            if not secrets:
                continue
            assert where != "agent", f"the agent's role names Secrets: {rule}"
            # Installing the agent: create its token Secret, and read/replace that one Secret by name.
            assert role["kind"] == "Role" and (rule.get("resourceNames") or not set(rule["verbs"]) & READ), rule


def test_the_hub_reads_secrets_only_in_its_namespace_or_by_the_opt_in_get() -> None:
    for role in _generated()["hub"]:
        for rule in role["rules"]:
            if "secrets" in rule.get("resources", ()):
                assert role["kind"] == "Role" or set(rule["verbs"]) == {"get"}, (role["metadata"], rule)


@pytest.mark.parametrize("text", ["/secrets", "secrets", "Secrets", "*/pods", "/*", "apps/*"])
def test_clusterpulse_rbac_read_refuses_secrets_and_wildcards(text: str) -> None:
    with pytest.raises(ValueError, match=r"--read"):
        rbac.parse_read(text)
