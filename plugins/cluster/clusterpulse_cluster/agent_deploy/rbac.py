"""The agent's least-privilege ClusterRole: read-only, on exactly the resource types it reads.

Upstream grants ``get/list/watch`` on ``*/*`` (every resource, Secrets included). The agent
reads the types below plus the types of the enabled MetricSources, which plugins report
through ``clusterpulse_agent_read_types``; the role is rewritten when that set grows.
"""

from __future__ import annotations

from collections.abc import Iterable

from clusterpulse_cluster.agent_deploy.objects import PolicyRule
from clusterpulse_core.rbac import never_read

READ = ("get", "list", "watch")

#: (API group, resource) the built-in collectors read inside the agent.
BASE_TYPES: tuple[tuple[str, str], ...] = (
    ("", "namespaces"),
    ("", "nodes"),
    ("", "persistentvolumeclaims"),
    ("", "pods"),
    ("", "services"),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("config.openshift.io", "clusteroperators"),
    ("operators.coreos.com", "clusterserviceversions"),
    ("operators.coreos.com", "subscriptions"),
)
#: Single objects read by name: (group, resource, name).
NAMED_OBJECTS: tuple[tuple[str, str, str], ...] = (
    ("config.openshift.io", "clusterversions", "version"),
    ("route.openshift.io", "routes", "console"),
)


def grantable(group: str, resource: str) -> bool:
    """Whether the agent's role may name ``group``/``resource``: never Secrets (any case) nor a wildcard,
    whatever a MetricSource asks for (:func:`clusterpulse_core.rbac.never_read`)."""
    return not never_read(group, resource)


def agent_rules(extra_types: Iterable[tuple[str, str]] = ()) -> tuple[PolicyRule, ...]:
    """One read-only rule per API group (resources sorted), then the by-name rules.

    The result depends only on the set of types, so an unchanged set gives an identical role
    and no write. Types that are not :func:`grantable` are left out.
    A by-name rule is dropped when a MetricSource needs the whole type.
    """
    by_group: dict[str, set[str]] = {}
    for group, resource in (*BASE_TYPES, *extra_types):
        if not resource or not grantable(group, resource):
            continue
        by_group.setdefault(group, set()).add(resource)
    rules = [PolicyRule((group,), tuple(sorted(resources)), READ) for group, resources in sorted(by_group.items())]
    rules += [
        PolicyRule((group,), (resource,), READ, (name,))
        for group, resource, name in NAMED_OBJECTS
        if resource not in by_group.get(group, set())
    ]
    return tuple(rules)
