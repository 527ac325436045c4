"""Finding 2 (hub side): the Secret denial applies to what a source resolves to, in any spelling."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from clusterpulse_metricsource.agent import AgentSources
from clusterpulse_metricsource.catalog import builtin_catalog
from clusterpulse_metricsource.compiler import SpecError, compile_metric_source
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_metricsource.settings import MetricSourceSettings

from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.serde import dumps


def test_every_spelling_of_secrets_is_refused_unless_allowed() -> None:
    settings = MetricSourceSettings()
    for api_version, kind, group, resource in (
        ("v1", "secret", "", "secrets"),
        ("v1", "SECRET", "", "secrets"),
        ("/v1", "Secret", "", "secrets"),
        ("*/v1", "Secret", "*", "secrets"),
        ("v1", "Secret", "", "secrets"),
    ):
        assert "is refused" in settings.refusal(api_version, kind, group, resource), (api_version, kind)
    assert settings.refusal("v1", "ConfigMap", "", "configmaps") == ""
    allowed = MetricSourceSettings(allowed_source_kinds=("v1/Secret",))
    assert allowed.refusal("v1", "secret", "", "secrets") == ""
    denied = MetricSourceSettings(denied_source_kinds=("v1/ConfigMap",))
    assert "denied_source_kinds" in denied.refusal("v1", "configmap", "", "configmaps")


HOSTILE_SOURCES = [
    ("*/v1", "Secret", "spec.source.apiVersion"),
    ("/v1", "Secret", "spec.source.apiVersion"),
    ("v1", "*", "spec.source.kind"),
    ("v1", "secrets/status", "spec.source.kind"),
    ("Apps/v1", "Deployment", "spec.source.apiVersion"),
    ("v1\n", "Secret", "spec.source.apiVersion"),
]


def _source(api_version: str, kind: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "src", "namespace": "clusterpulse"},
        "spec": {
            "source": {"apiVersion": api_version, "kind": kind},
            "fields": [{"name": "n", "path": ".metadata.name"}],
        },
    }


@pytest.mark.parametrize(("api_version", "kind", "field"), HOSTILE_SOURCES)
def test_the_crd_and_the_compiler_refuse_a_hostile_source_name(api_version: str, kind: str, field: str) -> None:
    schema = crd_manifest(METRIC_SOURCE)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    source = schema["properties"]["spec"]["properties"]["source"]["properties"]
    value = api_version if field.endswith("apiVersion") else kind
    assert not re.fullmatch(source[field.rsplit(".", 1)[1]]["pattern"], value)
    with pytest.raises(SpecError) as caught:
        compile_metric_source(_source(api_version, kind))
    assert caught.value.field == field


def test_the_crd_and_the_compiler_accept_real_source_names() -> None:
    schema = crd_manifest(METRIC_SOURCE)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    source = schema["properties"]["spec"]["properties"]["source"]["properties"]
    for api_version, kind in (
        ("v1", "PersistentVolumeClaim"),
        ("apps/v1", "deployment"),
        ("gateway.networking.k8s.io/v1beta1", "HTTPRoute"),
        ("kubevirt.io/v1", "VirtualMachine"),
    ):
        assert re.fullmatch(source["apiVersion"]["pattern"], api_version)
        assert re.fullmatch(source["kind"]["pattern"], kind)
        assert compile_metric_source(_source(api_version, kind)).compiled.source.kind == kind


def _pushed(group: str, resource: str, kind: str = "ConfigMap") -> bytes:
    """A definition as a hostile (or Secret-allowing) hub could send it to an agent."""
    compiled = compile_metric_source(_source("v1", "ConfigMap")).compiled
    forged = attrs.evolve(compiled.source, group=group, resource=resource, kind=kind)
    return dumps(attrs.evolve(compiled, name=f"{resource.replace('*', 'any')}-{kind.lower()}", source=forged))


def test_the_agent_skips_a_definition_of_secrets_or_a_wildcard_whatever_the_hub_sends() -> None:
    sources = AgentSources()
    problems = sources.replace(
        [
            _pushed("", "configmaps"),
            _pushed("", "secrets", "Secret"),
            _pushed("", "SECRETS", "Secret"),
            _pushed("*", "pods", "Pod"),
        ],
        builtin_catalog(),
    )
    assert sources.source_ids == ["clusterpulse/configmaps-configmap"]
    assert len(problems) == 3
    assert all("which the agent never reads" in problem for problem in problems), problems


def test_the_agent_refuses_a_kind_its_cluster_resolves_to_secrets_before_listing(
    kube_api: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "data": {"password": "c2VjcmV0"},
    }
    cluster = kube_api(objects=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}, secret])
    sources = AgentSources()
    # The hub says the kind Secret is served as configmaps; the agent's cluster knows better.
    assert sources.replace([_pushed("", "configmaps", "Secret")], builtin_catalog()) == []
    client = KubeClient(cluster.api_client(), timeout=10)
    try:
        pieces = sources.collect(ClusterTarget("east", cluster.url, client))
    finally:
        client.close()
    assert pieces == []
    assert "resolves to core/secrets on cluster east, which is not read" in caplog.text
    listed = [path for method, path, _query in cluster.requests if method == "GET" and "/api/v1/" in path]
    assert not [path for path in listed if path.endswith(("/secrets", "/configmaps"))], listed
