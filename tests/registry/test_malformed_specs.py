"""Malformed RegistryConnections, as data: each case is a spec change and the field its error must name.

The RegistryConnection kind's part of the malformed-CR corpus (tests/faults/test_malformed_crs.py
holds the ClusterConnection part; this one lives here for the registry fixtures). Every case is
applied to a RegistryConnection checked successfully first against a real docker-registry: the
reconcile must not raise, the status must be ``phase: Error`` naming the field, no request or
store happens for the bad spec (the last good check's data is kept), and the good spec is
``Connected`` again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from clusterpulse_model.pieces import RegistryMetricsPiece, RegistrySpecPiece, RegistryStatusPiece
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_testing.recording import BackendPlugin
from malformed_corpus import Corpus, api_server_verdict, crd_hub_fixture
from registry_support import RegistryHub, RunningRegistry

from clusterpulse_core.runtime.bootstrap import reconcile_object

#: (case id, spec changes, field the error names). ``__spec__`` replaces the whole spec.
REGISTRY_CONNECTION_CASES: list[tuple[str, Mapping[str, Any], str]] = [
    ("empty endpoint", {"endpoint": ""}, "spec.endpoint"),
    ("endpoint not a string", {"endpoint": 42}, "spec.endpoint"),
    ("huge endpoint", {"endpoint": "https://" + "e" * 900_000}, "spec.endpoint"),
    ("endpoint with spaces", {"endpoint": "https://a b"}, "spec.endpoint"),
    ("endpoint ftp", {"endpoint": "ftp://registry.example"}, "spec.endpoint"),
    ("endpoint without host", {"endpoint": "https://"}, "spec.endpoint"),
    ("endpoint port out of range", {"endpoint": "https://r.example:99999"}, "spec.endpoint"),
    ("long displayName", {"displayName": "d" * 300}, "spec.displayName"),
    ("type not a string", {"type": ["harbor"]}, "spec.type"),
    ("insecure a string", {"insecure": "yes"}, "spec.insecure"),
    ("skipTLSVerify a number", {"skipTLSVerify": 1}, "spec.skipTLSVerify"),
    ("credentialsRef not an object", {"credentialsRef": "creds"}, "spec.credentialsRef"),
    ("empty credentialsRef name", {"credentialsRef": {"name": ""}}, "spec.credentialsRef.name"),
    ("credentialsRef name with a path", {"credentialsRef": {"name": "../x"}}, "spec.credentialsRef.name"),
    (
        "credentialsRef bad namespace",
        {"credentialsRef": {"name": "c", "namespace": "A_B"}},
        "spec.credentialsRef.namespace",
    ),
    ("monitoring not an object", {"monitoring": 30}, "spec.monitoring"),
    ("interval negative", {"monitoring": {"interval": -5}}, "spec.monitoring.interval"),
    ("interval huge", {"monitoring": {"interval": 10**12}}, "spec.monitoring.interval"),
    ("interval a string", {"monitoring": {"interval": "30"}}, "spec.monitoring.interval"),
    ("interval a float", {"monitoring": {"interval": 30.5}}, "spec.monitoring.interval"),
    ("timeout a boolean", {"monitoring": {"timeout": True}}, "spec.monitoring.timeout"),
    ("maxCatalogEntries huge", {"monitoring": {"maxCatalogEntries": 10**9}}, "spec.monitoring.maxCatalogEntries"),
    ("checkCatalog a string", {"monitoring": {"checkCatalog": "true"}}, "spec.monitoring.checkCatalog"),
    ("too many labels", {"labels": {f"k{i}": "v" for i in range(65)}}, "spec.labels"),
    ("long label value", {"labels": {"team": "v" * 2000}}, "spec.labels.team"),
    ("label not a string", {"labels": {"team": {"a": 1}}}, "spec.labels.team"),
    ("healthCheckPaths not a list", {"healthCheckPaths": "/v2/"}, "spec.healthCheckPaths"),
    ("healthCheckPath not a path", {"healthCheckPaths": ["v2"]}, "spec.healthCheckPaths[0]"),
    ("spec not an object", {"__spec__": "nope"}, "spec"),
]


@pytest.fixture
def checked(hub: RegistryHub, recorder: BackendPlugin, docker_registry: RunningRegistry) -> Any:
    hub.create("local", {"endpoint": docker_registry.url, "displayName": "Local", "monitoring": {"checkCatalog": True}})
    good = hub.get("local")

    def reconcile(spec: Any = None) -> tuple[dict[str, Any], Any]:
        obj = {**hub.get("local"), "spec": good["spec"] if spec is None else spec}
        outcome = reconcile_object(hub.runtime, "registry", REGISTRY_CONNECTION, obj)
        assert "Traceback" not in (outcome.detail or "")
        return hub.status("local"), outcome

    status, _ = reconcile()
    assert status["phase"] == "Connected", status
    yield good, reconcile


@pytest.mark.parametrize(
    ("case", "changes", "field"), REGISTRY_CONNECTION_CASES, ids=[case[0] for case in REGISTRY_CONNECTION_CASES]
)
def test_a_malformed_registry_connection_is_an_error_naming_its_field(
    checked: Any, recorder: BackendPlugin, case: str, changes: Mapping[str, Any], field: str
) -> None:
    good, reconcile = checked
    stored = [
        len(recorder.backend.of(piece)) for piece in (RegistrySpecPiece, RegistryStatusPiece, RegistryMetricsPiece)
    ]
    spec: Any = changes["__spec__"] if "__spec__" in changes else {**good["spec"], **changes}
    status, outcome = reconcile(spec)
    print(f"\n{case}: {status.get('phase')}: {str(status.get('message'))[:160]}")
    assert (status["phase"], status["health"], status["available"]) == ("Error", "unhealthy", False)
    assert field in status["message"]
    assert len(status["message"]) <= 1100
    assert not outcome.ok and field in outcome.detail
    # Nothing was checked or stored for the bad spec: the last good check's data is kept.
    assert [
        len(recorder.backend.of(piece)) for piece in (RegistrySpecPiece, RegistryStatusPiece, RegistryMetricsPiece)
    ] == stored
    assert recorder.backend.of(RegistrySpecPiece)[-1].spec.endpoint == good["spec"]["endpoint"]
    # The same bad spec again changes nothing on the hub (no status write per retry).
    again, _ = reconcile(spec)
    assert again == status
    # And the good spec reconciles again.
    assert reconcile()[0]["phase"] == "Connected"


#: The spec the cases change, as the fixture writes it (the verdict needs no registry).
CORPUS = Corpus(
    REGISTRY_CONNECTION,
    "registry",
    "local",
    {"endpoint": "http://127.0.0.1:5000", "displayName": "Local", "monitoring": {"checkCatalog": True}},
)
crd_hub = crd_hub_fixture(REGISTRY_CONNECTION)


@pytest.mark.parametrize("case", REGISTRY_CONNECTION_CASES, ids=[case[0] for case in REGISTRY_CONNECTION_CASES])
def test_the_api_server_refuses_what_the_crd_schema_can(crd_hub: Any, case: tuple[str, Mapping[str, Any], str]) -> None:
    api_server_verdict(crd_hub, CORPUS, case)
