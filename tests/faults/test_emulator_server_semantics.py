"""The API server emulator behaves like a real API server where the fault handling depends on it:
410 for a watch from a future resourceVersion, resourceVersions that do not go backwards when
the same data is served again, and CRD schema validation on create."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_testing.kube_api import ApiError, KubeAPI

from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.kube.client import KubeApiError, KubeClient, make_api_client
from clusterpulse_core.runtime.informer import Informer

NAMESPACE = "clusterpulse"
API = f"{CLUSTER_CONNECTION.group}/{CLUSTER_CONNECTION.version}"


def _objects(*names: str) -> list[dict[str, Any]]:
    return [
        crd_manifest(CLUSTER_CONNECTION),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        *(
            {
                "apiVersion": API,
                "kind": "ClusterConnection",
                "metadata": {"name": n, "namespace": NAMESPACE},
                "spec": {"endpoint": "https://x", "credentialsRef": {"name": "t"}},
            }
            for n in names
        ),
    ]


def test_a_watch_from_a_future_resource_version_gets_410() -> None:
    with KubeAPI() as api:
        api.seed(_objects())
        future = int(api.resource_version) + 1000
        url = f"{api.url}/api/v1/namespaces?watch=true&resourceVersion={future}&timeoutSeconds=2"
        request = urllib.request.Request(url, headers={"Authorization": "Bearer test"})
        with urllib.request.urlopen(request, timeout=10) as response:
            event = json.loads(response.readline())
        assert event["type"] == "ERROR"
        assert event["object"]["code"] == 410
        assert "too large resource version" in event["object"]["message"]


def test_invalid_custom_resources_are_refused_on_create() -> None:
    with KubeAPI() as api:
        api.seed(_objects("good"))
        bad = {
            "apiVersion": API,
            "kind": "ClusterConnection",
            "metadata": {"name": "bad", "namespace": NAMESPACE},
            "spec": {"endpoint": "https://x", "credentialsRef": {"name": "t"}, "monitoring": {"interval": "abc"}},
        }
        with pytest.raises(ApiError) as caught:
            api.create(bad)
        assert caught.value.code == 422
        client = KubeClient(make_api_client(api.url, "test"))
        with pytest.raises(KubeApiError) as over_http:
            client.request("POST", CLUSTER_CONNECTION.api_path(NAMESPACE), body=bad)
        print(f"\n{over_http.value}")
        assert over_http.value.status == 422
        assert "spec.monitoring.interval in body must be of type integer" in str(over_http.value)
        bad["spec"]["collectionMode"] = "carrier-pigeon"
        bad["spec"]["monitoring"] = {"interval": 60}
        with pytest.raises(ApiError, match="Unsupported value"):
            api.create(bad)
        del bad["spec"]["collectionMode"]
        assert api.create(bad)["spec"]["monitoring"] == {"interval": 60}


def test_serving_the_same_data_again_never_goes_back_and_watchers_catch_up_at_once() -> None:
    first = KubeAPI().start()
    first.seed(_objects("one"))
    informer = Informer(KubeClient(make_api_client(first.url, "test"), timeout=5), CLUSTER_CONNECTION, NAMESPACE)
    informer.start()
    try:
        assert informer.wait_synced(10)
        before = int(first.resource_version)
        first.stop()
        time.sleep(0.05)
        # The same data served again on the same port by a new server, plus an object created since.
        second = KubeAPI(port=first.port).start()
        second.seed(_objects("one", "two"))
        after = int(second.resource_version)
        started = time.monotonic()
        while informer.get(NAMESPACE, "two") is None:
            assert time.monotonic() - started < 15, "the informer did not pick up the new object"
            time.sleep(0.05)
        print(
            f"\nresourceVersion {before} -> {after} across the restart; new object seen after "
            f"{time.monotonic() - started:.1f}s"
        )
        assert after > before
    finally:
        informer.stop()
        second.stop()


def test_the_crd_bounds_are_enforced_with_the_api_servers_causes() -> None:
    with KubeAPI() as api:
        api.seed(_objects("good"))
        bad = {
            "apiVersion": API,
            "kind": "ClusterConnection",
            "metadata": {"name": "bad", "namespace": NAMESPACE},
            "spec": {
                "endpoint": "https://" + "e" * 3000,
                "credentialsRef": {"name": "../x"},
                "labels": {f"k{i}": "v" for i in range(65)},
                "monitoring": {"interval": -5},
            },
        }
        client = KubeClient(make_api_client(api.url, "test"))
        body = api_client_error(api, bad)
        print(f"\n{body['message']}")
        assert body["code"] == 422 and body["reason"] == "Invalid"
        assert body["message"].startswith('ClusterConnection.clusterpulse.io "bad" is invalid: [spec.')
        causes = {cause["field"]: (cause["reason"], cause["message"]) for cause in body["details"]["causes"]}
        assert causes == {
            "spec.endpoint": ("FieldValueTooLong", "Too long: may not be more than 2048 bytes"),
            "spec.credentialsRef.name": (
                "FieldValueInvalid",
                f'Invalid value: "../x": spec.credentialsRef.name in body should match '
                f"'{CLUSTER_CONNECTION.schema['properties']['spec']['properties']['credentialsRef']['properties']['name']['pattern']}'",
            ),
            "spec.labels": ("FieldValueTooMany", "Too many: 65: must have at most 64 items"),
            "spec.monitoring.interval": (
                "FieldValueInvalid",
                "Invalid value: -5: spec.monitoring.interval in body should be greater than or equal to 0",
            ),
        }
        del bad["spec"]["credentialsRef"]
        with pytest.raises(KubeApiError, match=r"spec\.credentialsRef: Required value"):
            client.request("POST", CLUSTER_CONNECTION.api_path(NAMESPACE), body=bad)
        # An object stored under a looser CRD keeps taking status writes (validation ratcheting).
        stored = api.create({**bad, "spec": {**bad["spec"], "credentialsRef": {"name": "t"}}}, validate=False)
        stored["status"] = {"phase": "Error", "message": "spec.endpoint: too long"}
        stored = api.update(stored)
        assert stored["status"]["phase"] == "Error"
        stored["spec"]["displayName"] = "d" * 300
        with pytest.raises(ApiError, match=r"spec\.displayName: Too long"):
            api.update(stored)


def api_client_error(api: KubeAPI, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``Status`` body a create of ``obj`` is refused with, through the real kubernetes client."""
    import kubernetes

    custom = kubernetes.client.CustomObjectsApi(api.api_client())
    kind = CLUSTER_CONNECTION
    with pytest.raises(kubernetes.client.ApiException) as refused:
        custom.create_namespaced_custom_object(kind.group, kind.version, NAMESPACE, kind.plural, obj)
    body: dict[str, Any] = json.loads(refused.value.body)
    return body
