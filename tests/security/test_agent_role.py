"""Finding 2 (agent side): whatever types the MetricSources ask for, the agent's role never reads Secrets
nor holds a wildcard."""

from __future__ import annotations

from clusterpulse_cluster.agent_deploy.rbac import agent_rules


def test_the_agent_role_never_grants_secrets_or_a_wildcard() -> None:
    asked = [
        ("", "secrets"),
        ("", "SECRETS"),
        ("*", "secrets"),
        ("", "Secrets"),
        ("apps", "*"),
        ("*", "pods"),
        ("batch", "jobs"),
    ]
    rules = agent_rules(asked)
    names = [(group, resource) for rule in rules for group in rule.api_groups for resource in rule.resources]
    assert ("batch", "jobs") in names
    assert not [n for n in names if n[1].lower() == "secrets" or "*" in n[0] or "*" in n[1]], names
