"""Least-privilege RBAC generated from what the enabled kinds declare (``clusterpulse rbac``).

Three sets of manifests:

* the hub (:func:`hub_manifests`): a Role in the watched namespace for the controller's
  ServiceAccount: list/watch of every enabled kind, ``patch`` of its status, what each kind's
  reconcile declares in :attr:`ResourceKind.hub_access` (e.g. ``get`` on the Secrets it
  references), ``create`` on Events and, with leader election, the Lease;
* the hub, opt-in (:func:`cross_namespace_manifests`): a ClusterRole and ClusterRoleBinding for the
  accesses marked ``other_namespaces`` (Secrets named by ``credentialsRef.namespace``);
* a managed cluster (:func:`managed_manifests`): a read-only ClusterRole with what the kinds'
  collectors read (:attr:`ResourceKind.managed_access`), a ServiceAccount, its binding and a
  long-lived token Secret, whose token and CA go into the hub Secret a ClusterConnection names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from clusterpulse_core.config import CoreSettings, did_you_mean
from clusterpulse_core.kinds import ApiAccess, ResourceKind
from clusterpulse_core.runtime.leader import LEASE_NAME
from clusterpulse_core.runtime.lease import LEASE_KIND

CONTROLLER = "clusterpulse-controller"
READER = "clusterpulse-reader"
READER_NAMESPACE = "clusterpulse-reader"
RBAC_API = "rbac.authorization.k8s.io/v1"
_LABELS = {"app.kubernetes.io/part-of": "clusterpulse"}
#: Pod Security Admission labels of every Namespace the manifests create: ``restricted`` enforced.
POD_SECURITY_LABELS = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}


def never_read(group: str, resource: str) -> str:
    """Why nothing ClusterPulse runs on a managed cluster may read ``group``/``resource``, or ``""``.

    Secrets (``secrets`` in any case and group, or a subresource of it) and wildcards (``*`` in the
    group or the resource) are never granted to the agent's role nor read by a collector, whatever a
    MetricSource asks for (docs/security.md#the-agents-role); the hub refuses such a MetricSource
    unless Secrets are explicitly allowed.
    """
    folded_group, folded = group.strip().lower(), resource.strip().lower()
    if "*" in folded_group or "*" in folded:
        return f"{group or 'core'}/{resource} holds a wildcard"
    if folded.partition("/")[0] == "secrets":
        return f"{group or 'core'}/{resource} is Secrets"
    return ""


def kind_hub_access(kind: ResourceKind) -> list[ApiAccess]:
    """What the core does with a kind on the hub (informer list/watch, status patch) plus its own declarations."""
    own = [ApiAccess(kind.group, (kind.plural,), ("list", "watch"))]
    status = f"{kind.plural}/status" if kind.status_subresource else kind.plural
    own.append(ApiAccess(kind.group, (status,), ("patch",)))
    return own + list(kind.hub_access)


def core_hub_access(settings: CoreSettings) -> list[ApiAccess]:
    """What the core itself calls on the hub: Events (kube/events.py), the leader Lease when elected,
    and with sharding the member Leases (named after each replica: listed, read, renewed, and deleted
    once their member is long dead)."""
    events = [ApiAccess("", ("events",), ("create",))]
    if not settings.leader_elect and not settings.sharding:
        return events
    accesses = [
        *events,
        ApiAccess(LEASE_KIND.group, (LEASE_KIND.plural,), ("create",)),
        ApiAccess(LEASE_KIND.group, (LEASE_KIND.plural,), ("get", "update"), resource_names=(LEASE_NAME,)),
    ]
    if settings.sharding:
        accesses.append(ApiAccess(LEASE_KIND.group, (LEASE_KIND.plural,), ("get", "list", "update", "delete")))
    return accesses


def rules(accesses: Iterable[ApiAccess]) -> list[dict[str, Any]]:
    """Merge accesses into sorted, de-duplicated RBAC ``rules`` (one per group/names/verbs)."""
    verbs: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
    urls: dict[str, set[str]] = {}
    for access in accesses:
        for resource in access.resources:
            verbs.setdefault((access.group, resource, tuple(sorted(access.resource_names))), set()).update(access.verbs)
        for url in access.non_resource_urls:
            urls.setdefault(url, set()).update(access.verbs)
    grouped: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for (group, resource, names), resource_verbs in verbs.items():
        grouped.setdefault((group, names, tuple(sorted(resource_verbs))), []).append(resource)
    out: list[dict[str, Any]] = []
    for (group, names, rule_verbs), resources in sorted(grouped.items()):
        rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
        if names:
            rule["resourceNames"] = list(names)
        rule["verbs"] = list(rule_verbs)
        out.append(rule)
    by_verbs: dict[tuple[str, ...], list[str]] = {}
    for url, verb_set in urls.items():
        by_verbs.setdefault(tuple(sorted(verb_set)), []).append(url)
    for path_verbs, paths in sorted(by_verbs.items()):
        out.append({"nonResourceURLs": sorted(paths), "verbs": list(path_verbs)})
    return out


def _namespace(name: str) -> dict[str, Any]:
    meta = _meta(name)
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {**meta, "labels": {**meta.get("labels", {}), **POD_SECURITY_LABELS}},
    }


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = dict(_LABELS)
    return meta


def _binding(
    kind: str, name: str, namespace: str | None, role_kind: str, subject_namespace: str, subject: str
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API,
        "kind": kind,
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": subject_namespace}],
    }


def hub_manifests(
    kinds: Sequence[ResourceKind], settings: CoreSettings, service_account: str = CONTROLLER
) -> list[dict[str, Any]]:
    """The Role and RoleBinding the controller needs in the watched namespace."""
    namespace = settings.namespace
    accesses = core_hub_access(settings)
    for kind in kinds:
        accesses += kind_hub_access(kind)
    role = {
        "apiVersion": RBAC_API,
        "kind": "Role",
        "metadata": _meta(service_account, namespace),
        "rules": rules(accesses),
    }
    return [role, _binding("RoleBinding", service_account, namespace, "Role", namespace, service_account)]


def cross_namespace_manifests(
    kinds: Sequence[ResourceKind], settings: CoreSettings, service_account: str = CONTROLLER
) -> list[dict[str, Any]]:
    """The opt-in ClusterRole (and binding) for accesses outside the watched namespace."""
    name = f"{service_account}-cross-namespace"
    accesses = [a for kind in kinds for a in kind.hub_access if a.other_namespaces]
    if not accesses:
        return []
    role = {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": _meta(name), "rules": rules(accesses)}
    binding = _binding("ClusterRoleBinding", name, None, "ClusterRole", settings.namespace, service_account)
    binding["roleRef"]["name"] = name
    return [role, binding]


def managed_manifests(
    kinds: Sequence[ResourceKind],
    extra: Sequence[ApiAccess] = (),
    name: str = READER,
    namespace: str = READER_NAMESPACE,
    push: bool = False,
) -> list[dict[str, Any]]:
    """The read-only ClusterRole, ServiceAccount, binding and token Secret for one managed cluster.

    ``push``: the cluster is collected in push mode, so the hub also installs the collector agent
    there with these credentials: the kinds' ``managed_push_access`` (writes) is added, in the
    ClusterRole, or for an access confined to a namespace in a Role (and RoleBinding) there, with
    that Namespace.
    """
    accesses = [a for kind in kinds for a in kind.managed_access] + list(extra)
    for access in accesses:
        if set(access.verbs) - {"get", "list", "watch"}:
            raise ValueError(
                f"managed-cluster access must be read-only, got {sorted(access.verbs)} "
                f"on {access.resources or access.non_resource_urls}"
            )
    scoped: dict[str, list[ApiAccess]] = {}
    if push:
        for access in (a for kind in kinds for a in kind.managed_push_access):
            if access.namespace:
                scoped.setdefault(access.namespace, []).append(access)
            else:
                accesses.append(access)
    docs: list[dict[str, Any]] = [
        _namespace(namespace),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)},
        {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": _meta(name), "rules": rules(accesses)},
        _binding("ClusterRoleBinding", name, None, "ClusterRole", namespace, name),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                **_meta(f"{name}-token", namespace),
                "annotations": {"kubernetes.io/service-account.name": name},
            },
        },
    ]
    # Push access confined to one namespace (the agent's): the Namespace, a Role there and its binding.
    for where, granted in sorted(scoped.items()):
        if where != namespace:
            docs.append(_namespace(where))
        docs.append({"apiVersion": RBAC_API, "kind": "Role", "metadata": _meta(name, where), "rules": rules(granted)})
        docs.append(_binding("RoleBinding", name, where, "Role", namespace, name))
    return docs


#: The API group of every resource a Kubernetes (1.30) API server serves by itself, by plural
#: name: how ``--read RESOURCE`` without a group is resolved (a custom resource names its group).
BUILTIN_RESOURCES: dict[str, str] = {
    **dict.fromkeys(
        (
            "pods",
            "services",
            "endpoints",
            "nodes",
            "namespaces",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "persistentvolumes",
            "persistentvolumeclaims",
            "events",
            "limitranges",
            "resourcequotas",
            "replicationcontrollers",
            "podtemplates",
            "componentstatuses",
        ),
        "",
    ),
    **dict.fromkeys(("deployments", "statefulsets", "daemonsets", "replicasets", "controllerrevisions"), "apps"),
    **dict.fromkeys(("jobs", "cronjobs"), "batch"),
    **dict.fromkeys(("ingresses", "ingressclasses", "networkpolicies"), "networking.k8s.io"),
    "poddisruptionbudgets": "policy",
    "horizontalpodautoscalers": "autoscaling",
    **dict.fromkeys(
        ("storageclasses", "volumeattachments", "csidrivers", "csinodes", "csistoragecapacities"), "storage.k8s.io"
    ),
    **dict.fromkeys(("roles", "rolebindings", "clusterroles", "clusterrolebindings"), "rbac.authorization.k8s.io"),
    "leases": "coordination.k8s.io",
    "endpointslices": "discovery.k8s.io",
    "customresourcedefinitions": "apiextensions.k8s.io",
    **dict.fromkeys(
        ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"), "admissionregistration.k8s.io"
    ),
    "priorityclasses": "scheduling.k8s.io",
    "runtimeclasses": "node.k8s.io",
    "certificatesigningrequests": "certificates.k8s.io",
    "apiservices": "apiregistration.k8s.io",
}


def parse_read(text: str, kinds: Sequence[ResourceKind] = ()) -> ApiAccess:
    """``GROUP/RESOURCE`` (``/pods`` for the core group) or a bare ``RESOURCE`` as a get/list access.

    A bare name is resolved from the built-in resources and ``kinds`` (the enabled plugins'
    kinds), never guessed: an unknown one is a :class:`ValueError` asking for its group. A
    built-in resource named with the wrong group is refused too, and so is what :func:`never_read`
    refuses (Secrets, a wildcard).
    """
    known = {**BUILTIN_RESOURCES, **{kind.plural: kind.group for kind in kinds}}
    group, slash, resource = text.rpartition("/")
    if not resource or "/" in group or resource != resource.lower():
        raise ValueError(
            f"--read: expected GROUP/RESOURCE with the plural resource name (e.g. apps/statefulsets, "
            f"/pods for the core group), got {text!r}"
        )
    if not slash:
        if resource not in known:
            hint = did_you_mean(resource, known)
            raise ValueError(
                f"--read {text}: not a built-in resource nor one of the enabled kinds ({hint}a custom "
                f"resource needs its group: GROUP/{resource})"
            )
        group = known[resource]
    elif resource in BUILTIN_RESOURCES and group != BUILTIN_RESOURCES[resource] and group in BUILTIN_RESOURCES.values():
        right = BUILTIN_RESOURCES[resource]
        raise ValueError(f"--read {text}: {resource} is in the {right or 'core'!r} group: --read {right}/{resource}")
    refused = never_read(group, resource)
    if refused:
        raise ValueError(
            f"--read {text}: {refused}, which no generated role grants (docs/security.md); a "
            f"MetricSource allowed to read Secrets needs a rule written by hand"
        )
    return ApiAccess(group, (resource,), ("get", "list"))


def manifests_yaml(docs: Iterable[dict[str, Any]], header: str = "") -> str:
    """Multi-document YAML, with ``header`` as leading comment lines."""
    body = yaml.safe_dump_all(list(docs), sort_keys=False, default_flow_style=False)
    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + body
