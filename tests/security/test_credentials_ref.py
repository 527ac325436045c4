"""Finding 6: a credentialsRef name or namespace never reaches the hub's API path unchecked."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from security_support import TOKEN, ClusterHub, managed_objects


@pytest.mark.parametrize(
    ("ref", "field"),
    [
        ({"name": "a?labelSelector=x"}, "credentialsRef.name"),
        ({"name": "../../configmaps/x"}, "credentialsRef.name"),
        ({"name": "ok", "namespace": "kube-system/secrets"}, "credentialsRef.namespace"),
        ({"name": "Upper"}, "credentialsRef.name"),
    ],
)
def test_a_hostile_credentials_ref_is_refused_before_any_hub_request(
    cluster_hub: ClusterHub, kube_api: Callable[..., Any], ref: dict[str, str], field: str
) -> None:
    cluster = kube_api(objects=managed_objects(), require_token=TOKEN)
    cluster_hub.hub.create(
        {
            "apiVersion": "clusterpulse.io/v1alpha1",
            "kind": "ClusterConnection",
            "metadata": {"name": "east", "namespace": "clusterpulse"},
            "spec": {"endpoint": cluster.url, "credentialsRef": ref},
        }
    )
    cluster_hub.hub.clear_requests()
    status = cluster_hub.reconcile("east")
    assert status["phase"] == "Error"
    assert f"invalid {field}" in status["message"], status["message"]
    assert not [path for _m, path, _q in cluster_hub.hub.requests if "/secrets" in path or "/configmaps" in path]
    assert cluster.requests == []


def test_the_crds_refuse_those_names_too() -> None:
    from clusterpulse_cluster.crd import CLUSTER_CONNECTION
    from clusterpulse_registry.kind import REGISTRY_CONNECTION

    from clusterpulse_core.crds import crd_manifest

    for kind in (CLUSTER_CONNECTION, REGISTRY_CONNECTION):
        schema = crd_manifest(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        ref = schema["properties"]["spec"]["properties"]["credentialsRef"]["properties"]
        for field, good, bad in (
            ("name", "prod-east.token", ["a?labelSelector=x", "../x", "Upper", ""]),
            ("namespace", "clusterpulse", ["kube-system/secrets", "a.b", "-x"]),
        ):
            assert re.fullmatch(ref[field]["pattern"], good), (kind.kind, field)
            assert not [text for text in bad if re.fullmatch(ref[field]["pattern"], text)], (kind.kind, field)
        assert (ref["name"]["maxLength"], ref["namespace"]["maxLength"]) == (253, 63)
