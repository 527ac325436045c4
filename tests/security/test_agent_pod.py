"""Finding 10: the agent the hub installs meets the restricted Pod Security level, its namespace is
labelled for it and closed by a default-deny NetworkPolicy, and its image names its registry."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from clusterpulse_cluster.agent_deploy.objects import NetworkPolicy, Owner, to_wire
from clusterpulse_cluster.agent_deploy.plan import AgentPlan
from clusterpulse_cluster.settings import DEFAULT_COLLECTOR_IMAGE, ClusterSettings, fully_qualified

from clusterpulse_core.config import build_settings
from clusterpulse_core.rbac import POD_SECURITY_LABELS

K8S_SCHEMA_VERSION = "1.37.0"  # as tests/test_deploy.py


def _plan(**overrides: Any) -> AgentPlan:
    options: dict[str, Any] = {
        "owner": Owner("clusterpulse", "east"),
        "cluster_name": "east",
        "ingester_address": "ingester.example:9443",
        "token": "t",
        "image": f"{DEFAULT_COLLECTOR_IMAGE}:1.0.0",
        "version": "1.0.0",
        "tls_enabled": True,
        "tls_server_name": "ingester.example",
        "ca_bundle": "-----BEGIN CERTIFICATE-----",
    }
    return AgentPlan(**{**options, **overrides})


def test_every_agent_object_validates_against_the_kubernetes_schemas() -> None:
    objects = [to_wire(obj) for _prefix, obj in _plan().objects()]
    assert {obj["kind"] for obj in objects} >= {"Namespace", "NetworkPolicy", "Deployment"}
    for obj in objects:
        kubernetes_validate.validate(obj, K8S_SCHEMA_VERSION, strict=True)


def test_the_pod_meets_the_restricted_level() -> None:
    deployment = to_wire(_plan().deployment())
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}
    namespace = to_wire(_plan().objects()[0][1])
    assert namespace["kind"] == "Namespace"
    assert namespace["metadata"]["labels"].items() >= POD_SECURITY_LABELS.items()


@pytest.mark.parametrize(
    ("address", "ports"),
    [
        ("ingester.example:9443", {53, 443, 6443, 9443}),
        ("dns:///ingester.example:7000", {53, 443, 6443, 7000}),
        ("ingester.example:443", {53, 443, 6443}),
    ],
)
def test_the_network_policy_denies_ingress_and_opens_only_the_needed_egress(address: str, ports: set[int]) -> None:
    policy = _plan(ingester_address=address).network_policy()
    assert isinstance(policy, NetworkPolicy)
    wire = to_wire(policy)
    assert wire["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in wire["spec"]
    assert {port["port"] for rule in wire["spec"]["egress"] for port in rule["ports"]} == ports


def test_the_default_image_is_fully_qualified_and_a_short_name_is_warned_about() -> None:
    assert fully_qualified(DEFAULT_COLLECTOR_IMAGE)
    assert list(ClusterSettings().settings_warnings()) == []
    for name in ("clusterpulse", "library/clusterpulse"):
        settings = build_settings(ClusterSettings, {"collector_image": name}, "plugins.cluster", {})
        (warning,) = settings.settings_warnings()
        assert warning.startswith(f"collector_image: {name!r} names no registry host")
    for name in ("localhost:5000/clusterpulse", "registry.example.com/team/clusterpulse@sha256:" + "0" * 64):
        assert fully_qualified(name)
