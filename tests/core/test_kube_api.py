"""The Kubernetes API emulator, exercised over HTTP with the real ``kubernetes`` client."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import urllib3
from clusterpulse_testing.kube_api import ApiError, KubeAPI
from clusterpulse_testing.polling import eventually
from kubernetes.client import ApiException

WAIT = 5.0  # upper bound for anything that should happen "soon"


@pytest.fixture
def api() -> Iterator[KubeAPI]:
    with KubeAPI() as server:
        yield server


@pytest.fixture
def core(api: KubeAPI) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api.api_client())


@pytest.fixture
def custom(api: KubeAPI) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api.api_client())


def pod(
    name: str,
    namespace: str = "demo",
    labels: dict[str, str] | None = None,
    node: str | None = None,
    phase: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    if node:
        body["spec"]["nodeName"] = node
    if phase:
        body["status"] = {"phase": phase}
    return body


def raw_get(api: KubeAPI, path: str, token: str | None = "test") -> tuple[int, Any]:
    client = api.api_client(token)
    response = client.call_api("GET", api.url + path)
    data = response.read()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, data.decode()


def error_body(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body)


def collect_events(
    api: KubeAPI, start: Callable[[], Iterator[dict[str, Any]]], action: Callable[[], None], count: int
) -> list[tuple[str, str]]:
    """Run ``start`` (a watch) in a thread, run ``action`` once it is connected, return ``count`` events."""
    events: queue.Queue[tuple[str, str] | BaseException] = queue.Queue()
    watches_before = sum(1 for _, _, q in api.requests if q.get("watch") in ("true", "1", "True"))

    def reader() -> None:
        try:
            for event in start():
                obj = event["raw_object"]
                events.put((event["type"], obj["metadata"]["name"]))
        except BaseException as exc:  # reported to the test
            events.put(exc)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    eventually(
        lambda: sum(1 for _, _, q in api.requests if q.get("watch") in ("true", "1", "True")) > watches_before,
        "the watch to connect",
        WAIT,
    )
    action()
    result = []
    for _ in range(count):
        item = events.get(timeout=WAIT)
        if isinstance(item, BaseException):
            raise item
        result.append(item)
    return result


# --- lifecycle, clients, auth --------------------------------------------------------------------------


def test_start_stop_url_and_health() -> None:
    server = KubeAPI().start()
    try:
        assert server.running
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert raw_get(server, "/healthz") == (200, "ok")
    finally:
        server.stop()
    assert not server.running
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        urllib3.PoolManager(retries=0).request("GET", server.url + "/healthz", timeout=1)


def test_restart_keeps_port_and_objects(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "demo"}})
    port = api.port
    api.restart()
    assert api.port == port
    assert core.read_namespace("demo").metadata.name == "demo"
    created = core.create_namespace({"metadata": {"name": "after"}})
    assert int(created.metadata.resource_version) > 1


def test_stop_ends_open_watches_promptly(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    def start() -> Iterator[dict[str, Any]]:
        return kubernetes.watch.Watch().stream(core.list_namespace)

    got = collect_events(api, start, lambda: core.create_namespace({"metadata": {"name": "x"}}), 1)
    assert got == [("ADDED", "x")]
    began = time.monotonic()
    api.stop()
    assert time.monotonic() - began < 3


def test_require_token_rejects_other_tokens() -> None:
    with KubeAPI(require_token="secret") as server:
        good = kubernetes.client.CoreV1Api(server.api_client("secret"))
        assert good.list_namespace().items == []
        for token in ("wrong", None):
            with pytest.raises(ApiException) as info:
                kubernetes.client.CoreV1Api(server.api_client(token)).list_namespace()
            assert info.value.status == 401
            assert error_body(info.value)["reason"] == "Unauthorized"


def test_bearer_scheme_is_case_insensitive_and_callers_are_logged() -> None:
    # The in-cluster loader of the kubernetes client sends "bearer <token>"; the API server accepts it.
    with KubeAPI(require_token="secret") as server:
        http = urllib3.PoolManager()
        for authorization, status in (
            ("bearer secret", 200),
            ("BEARER secret", 200),
            ("Basic secret", 401),
            ("bearer Secret", 401),
        ):
            response = http.request(
                "GET",
                f"{server.url}/api/v1/namespaces",
                headers={"Authorization": authorization, "User-Agent": f"probe/{status}"},
            )
            assert response.status == status, authorization
        assert [(c.method, c.path, c.user_agent) for c in server.callers] == [
            ("GET", "/api/v1/namespaces", ua) for ua in ("probe/200", "probe/200", "probe/401", "probe/401")
        ]
        server.clear_requests()
        assert server.callers == []


def test_port_in_use_fails_to_start(api: KubeAPI) -> None:
    with pytest.raises(OSError):
        KubeAPI(port=api.port).start()


def test_kmock_reactions_serve_extra_paths(api: KubeAPI) -> None:
    assert api.handler is not None
    api.handler["get /custom"] << {"hello": "world"}
    assert raw_get(api, "/custom") == (200, {"hello": "world"})
    status, body = raw_get(api, "/unknown")
    assert status == 404 and body["kind"] == "Status"


def test_any_token_accepted_by_default(api: KubeAPI) -> None:
    assert kubernetes.client.CoreV1Api(api.api_client("whatever")).list_node().items == []


def test_write_kubeconfig(api: KubeAPI, tmp_path: Path) -> None:
    path = api.write_kubeconfig(tmp_path / "kubeconfig", context_name="hub")
    client = kubernetes.config.new_client_from_config(config_file=str(path), context="hub")
    core = kubernetes.client.CoreV1Api(client)
    core.create_namespace({"metadata": {"name": "from-kubeconfig"}})
    assert api.get("v1", "Namespace", "from-kubeconfig") is not None


# --- object semantics -------------------------------------------------------------------------------------


def test_create_sets_server_metadata(core: kubernetes.client.CoreV1Api) -> None:
    first = core.create_namespace({"metadata": {"name": "demo"}})
    second = core.create_namespaced_pod("demo", pod("p1"))
    assert second.metadata.uid and second.metadata.uid != first.metadata.uid
    assert second.metadata.creation_timestamp is not None
    assert second.metadata.generation == 1
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    listed = core.list_namespaced_pod("demo")
    assert listed.metadata.resource_version == second.metadata.resource_version


def test_generate_name(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("demo", {"metadata": {"generateName": "cm-"}})
    assert created.metadata.name.startswith("cm-") and len(created.metadata.name) > 3


def test_not_found_is_a_status(core: kubernetes.client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("missing", "demo")
    body = error_body(info.value)
    assert info.value.status == 404
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)
    assert body["details"]["name"] == "missing"


def test_unknown_resource_is_404(api: KubeAPI) -> None:
    status, body = raw_get(api, "/apis/nothing.example.com/v1/things")
    assert status == 404 and body["kind"] == "Status"


def test_duplicate_create_is_already_exists(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_secret("demo", {"metadata": {"name": "s"}, "data": {}})
    with pytest.raises(ApiException) as info:
        core.create_namespaced_secret("demo", {"metadata": {"name": "s"}})
    assert info.value.status == 409
    assert error_body(info.value)["reason"] == "AlreadyExists"


def test_put_with_stale_resource_version_conflicts(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("demo", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    body = created.to_dict()
    body["data"] = {"a": "2"}
    updated = core.replace_namespaced_config_map("cm", "demo", body)
    assert updated.data == {"a": "2"}
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("cm", "demo", body)  # still carries the old version
    assert info.value.status == 409
    assert error_body(info.value)["reason"] == "Conflict"


def test_generation_bumps_on_spec_changes_only(custom: kubernetes.client.CustomObjectsApi, api: KubeAPI) -> None:
    api.add_crd("example.com", "v1", "Widget", "widgets")
    args = ("example.com", "v1", "demo", "widgets")
    custom.create_namespaced_custom_object(
        *args, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    )
    labelled = custom.patch_namespaced_custom_object(*args, "w", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 1
    resized = custom.patch_namespaced_custom_object(*args, "w", {"spec": {"size": 2}})
    assert resized["metadata"]["generation"] == 2
    status = custom.patch_namespaced_custom_object_status(*args, "w", {"status": {"ready": True}})
    assert status["metadata"]["generation"] == 2
    assert status["status"] == {"ready": True}


def test_noop_update_keeps_resource_version(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("demo", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    same = core.patch_namespaced_config_map("cm", "demo", {"data": {"a": "1"}})
    assert same.metadata.resource_version == created.metadata.resource_version


def test_delete_then_gone(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_service("demo", {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}})
    core.delete_namespaced_service("svc", "demo")
    with pytest.raises(ApiException) as info:
        core.read_namespaced_service("svc", "demo")
    assert info.value.status == 404
    with pytest.raises(ApiException) as info:
        core.delete_namespaced_service("svc", "demo")
    assert info.value.status == 404


def test_finalizers_delay_deletion(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_config_map("demo", {"metadata": {"name": "cm", "finalizers": ["x/y"]}})
    core.delete_namespaced_config_map("cm", "demo")
    marked = core.read_namespaced_config_map("cm", "demo")
    assert marked.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("cm", "demo", {"metadata": {"finalizers": None}})
    assert api.get("v1", "ConfigMap", "cm", "demo") is None


def test_cluster_scoped_and_other_groups(api: KubeAPI) -> None:
    client = api.api_client()
    core = kubernetes.client.CoreV1Api(client)
    node = core.create_node({"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4"}}})
    assert node.metadata.namespace is None
    assert node.status.capacity == {"cpu": "4"}  # builtins keep status on create
    apps = kubernetes.client.AppsV1Api(client)
    apps.create_namespaced_deployment(
        "demo",
        {
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            },
        },
    )
    assert [d.metadata.name for d in apps.list_deployment_for_all_namespaces().items] == ["d"]
    leases = kubernetes.client.CoordinationV1Api(client)
    lease = leases.create_namespaced_lease("demo", {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "me"}})
    lease.spec.holder_identity = "you"
    assert leases.replace_namespaced_lease("leader", "demo", lease).spec.holder_identity == "you"


# --- patches ----------------------------------------------------------------------------------------------


def test_patch_flavours(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_config_map("demo", {"metadata": {"name": "cm", "labels": {"a": "1", "b": "2"}}})
    strategic = core.patch_namespaced_config_map("cm", "demo", {"metadata": {"labels": {"c": "3"}}})
    assert strategic.metadata.labels == {"a": "1", "b": "2", "c": "3"}
    merged = core.patch_namespaced_config_map(  # merge-patch+json: null removes a key
        "cm", "demo", {"metadata": {"labels": {"a": None}}}, _content_type="application/merge-patch+json"
    )
    assert merged.metadata.labels == {"b": "2", "c": "3"}
    ops = [
        {"op": "replace", "path": "/metadata/labels/b", "value": "two"},
        {"op": "add", "path": "/data", "value": {"k": "v"}},
        {"op": "remove", "path": "/metadata/labels/c"},
    ]
    patched = core.patch_namespaced_config_map("cm", "demo", ops)
    assert patched.metadata.labels == {"b": "two"}
    assert patched.data == {"k": "v"}
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_config_map("cm", "demo", [{"op": "test", "path": "/data/k", "value": "x"}])
    assert info.value.status == 422


def test_patch_with_stale_resource_version_conflicts(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("demo", {"metadata": {"name": "cm"}})
    core.patch_namespaced_config_map("cm", "demo", {"data": {"a": "1"}})
    stale = {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"a": "2"}}
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_config_map("cm", "demo", stale)
    assert info.value.status == 409


# --- status subresource -----------------------------------------------------------------------------------


def test_status_subresource_isolation(api: KubeAPI, custom: kubernetes.client.CustomObjectsApi) -> None:
    api.add_crd("example.com", "v1", "Widget", "widgets")
    args = ("example.com", "v1", "demo", "widgets")
    created = custom.create_namespaced_custom_object(
        *args,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
            "status": {"phase": "ignored"},
        },
    )
    assert "status" not in created
    status_body = {**created, "status": {"phase": "Ready"}, "spec": {"size": 99}}
    with_status = custom.replace_namespaced_custom_object_status(*args, "w", status_body)
    assert with_status["status"] == {"phase": "Ready"}
    assert with_status["spec"] == {"size": 1}
    patch = {"spec": {"size": 2}, "status": {"phase": "Hacked"}}
    main = custom.patch_namespaced_custom_object(*args, "w", patch)
    assert main["status"] == {"phase": "Ready"} and main["spec"] == {"size": 2}
    body = {**main, "status": {"phase": "Hacked"}}
    replaced = custom.replace_namespaced_custom_object(*args, "w", body)
    assert replaced["status"] == {"phase": "Ready"}


def test_crd_without_status_subresource_stores_status(api: KubeAPI, custom: kubernetes.client.CustomObjectsApi) -> None:
    api.add_crd("example.com", "v1", "Gadget", "gadgets", namespaced=False, status_subresource=False)
    created = custom.create_cluster_custom_object(
        "example.com",
        "v1",
        "gadgets",
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "status": {"x": 1}},
    )
    assert created["status"] == {"x": 1} and "namespace" not in created["metadata"]
    status, _ = raw_get(api, "/apis/example.com/v1/gadgets/g/status")
    assert status == 404


# --- CRDs and discovery -------------------------------------------------------------------------------------


def test_crd_created_over_the_api_is_served_and_discoverable(api: KubeAPI) -> None:
    client = api.api_client()
    kubernetes.client.ApiextensionsV1Api(client).create_custom_resource_definition(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusterconnections.clusterpulse.io"},
            "spec": {
                "group": "clusterpulse.io",
                "scope": "Namespaced",
                "names": {
                    "kind": "ClusterConnection",
                    "plural": "clusterconnections",
                    "singular": "clusterconnection",
                    "shortNames": ["cc"],
                },
                "versions": [
                    {
                        "name": "v1alpha1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                    }
                ],
            },
        }
    )
    custom = kubernetes.client.CustomObjectsApi(client)
    custom.create_namespaced_custom_object(
        "clusterpulse.io",
        "v1alpha1",
        "ns",
        "clusterconnections",
        {"apiVersion": "clusterpulse.io/v1alpha1", "kind": "ClusterConnection", "metadata": {"name": "c1"}},
    )
    assert api.get("clusterpulse.io/v1alpha1", "cc", "c1", "ns") is not None

    groups = kubernetes.client.ApisApi(client).get_api_versions().groups
    assert "clusterpulse.io" in [group.name for group in groups]
    resources = custom.get_api_resources("clusterpulse.io", "v1alpha1").resources
    main = next(r for r in resources if r.name == "clusterconnections")
    assert (main.kind, main.namespaced, main.short_names) == ("ClusterConnection", True, ["cc"])
    assert {"get", "list", "watch", "patch"} <= set(main.verbs)
    assert "clusterconnections/status" in [r.name for r in resources]


def test_discovery_endpoints() -> None:
    with KubeAPI(version={"gitVersion": "v1.30.1", "platform": "linux/arm64"}) as server:
        client = server.api_client()
        version = kubernetes.client.VersionApi(client).get_code()
        assert (version.git_version, version.platform, version.minor) == ("v1.30.1", "linux/arm64", "30")
        assert kubernetes.client.CoreApi(client).get_api_versions().versions == ["v1"]
        core_resources = kubernetes.client.CoreV1Api(client).get_api_resources().resources
        pods = next(r for r in core_resources if r.name == "pods")
        assert (pods.kind, pods.namespaced) == ("Pod", True)
        assert "po" in pods.short_names
        groups = [g.name for g in kubernetes.client.ApisApi(client).get_api_versions().groups]
        assert {"apps", "coordination.k8s.io", "apiextensions.k8s.io"} <= set(groups)


# --- lists: scope, pagination, selectors --------------------------------------------------------------------


def test_cluster_wide_list_of_namespaced_resources(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.seed([pod("a", "ns1"), pod("b", "ns2"), pod("c", "ns1")])
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces().items] == ["a", "c", "b"]
    assert [p.metadata.name for p in core.list_namespaced_pod("ns1").items] == ["a", "c"]
    status, body = raw_get(api, "/api/v1/pods")
    assert status == 200 and body["kind"] == "PodList" and len(body["items"]) == 3


def test_pagination(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.seed(pod(f"p{i:03d}") for i in range(25))
    names: list[str] = []
    token = None
    pages = []
    for _ in range(10):  # bounded
        page = core.list_namespaced_pod("demo", limit=10, _continue=token)
        names.extend(p.metadata.name for p in page.items)
        pages.append((len(page.items), page.metadata.remaining_item_count))
        token = page.metadata._continue
        if not token:
            break
    assert pages == [(10, 15), (10, 5), (5, None)]
    assert names == [f"p{i:03d}" for i in range(25)]


def test_continue_token_expires_after_compaction(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.seed(pod(f"p{i}") for i in range(3))
    first = core.list_namespaced_pod("demo", limit=1)
    api.create(pod("later"))
    api.compact()
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("demo", limit=1, _continue=first.metadata._continue)
    assert info.value.status == 410


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("tier in (front, back)", ["a", "c"]),
        ("tier notin (front)", ["b", "c", "d"]),
        ("tier", ["a", "c"]),
        ("!tier", ["b", "d"]),
        ("app=web,tier=front", ["a"]),
    ],
)
def test_label_selectors(api: KubeAPI, core: kubernetes.client.CoreV1Api, selector: str, expected: list[str]) -> None:
    api.seed(
        [
            pod("a", labels={"app": "web", "tier": "front"}),
            pod("b", labels={"app": "web"}),
            pod("c", labels={"app": "db", "tier": "back"}),
            pod("d"),
        ]
    )
    found = core.list_namespaced_pod("demo", label_selector=selector).items
    assert [p.metadata.name for p in found] == expected


def test_bad_label_selector_is_400(core: kubernetes.client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod("demo", label_selector="a in b")
    assert info.value.status == 400


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("metadata.name=b", ["b"]),
        ("metadata.name!=b", ["a", "c"]),
        ("metadata.namespace=other", ["c"]),
        ("spec.nodeName=n1", ["a", "c"]),
        ("spec.nodeName=", ["b"]),
        ("status.phase=Running", ["a"]),
        ("status.phase!=Running,spec.nodeName=n1", ["c"]),
    ],
)
def test_field_selectors(api: KubeAPI, core: kubernetes.client.CoreV1Api, selector: str, expected: list[str]) -> None:
    api.seed(
        [
            pod("a", node="n1", phase="Running"),
            pod("b", phase="Pending"),
            pod("c", "other", node="n1", phase="Succeeded"),
        ]
    )
    found = core.list_pod_for_all_namespaces(field_selector=selector).items
    assert [p.metadata.name for p in found] == expected


def test_listing_ten_thousand_pods_in_pages(api: KubeAPI) -> None:
    api.seed(pod(f"p{i:05d}", f"ns{i % 10}") for i in range(10_000))
    client = api.api_client()
    began = time.monotonic()
    count, token = 0, ""
    for _ in range(100):  # bounded: 20 pages expected
        query = "?limit=500" + (f"&continue={token}" if token else "")
        response = client.call_api("GET", api.url + "/api/v1/pods" + query)
        body = json.loads(response.read())
        count += len(body["items"])
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert count == 10_000
    assert time.monotonic() - began < 10


# --- watches ------------------------------------------------------------------------------------------------


def test_watch_streams_changes_from_a_resource_version(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("demo").metadata.resource_version

    def start() -> Iterator[dict[str, Any]]:
        return kubernetes.watch.Watch().stream(core.list_namespaced_pod, "demo", resource_version=rv, timeout_seconds=5)

    def act() -> None:
        core.create_namespaced_pod("demo", pod("w"))
        core.patch_namespaced_pod("w", "demo", {"metadata": {"labels": {"x": "y"}}})
        api.create(pod("elsewhere", "other"))  # another namespace: not seen
        api.delete("v1", "pods", "w", "demo")  # helpers emit events too

    events = collect_events(api, start, act, 3)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_without_version_starts_with_current_objects(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.seed([pod("old")])

    def start() -> Iterator[dict[str, Any]]:
        return kubernetes.watch.Watch().stream(core.list_pod_for_all_namespaces, timeout_seconds=5)

    events = collect_events(api, start, lambda: api.create(pod("new", "other")), 2)
    assert events == [("ADDED", "old"), ("ADDED", "new")]


def test_watch_replays_history_and_honours_timeout(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    rv = core.list_namespaced_config_map("demo").metadata.resource_version
    api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one", "namespace": "demo"}})
    api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two", "namespace": "demo"}})
    began = time.monotonic()
    events = [
        (e["type"], e["object"].metadata.name)
        for e in kubernetes.watch.Watch().stream(
            core.list_namespaced_config_map, "demo", resource_version=rv, timeout_seconds=1
        )
    ]
    assert events == [("ADDED", "one"), ("ADDED", "two")]
    assert 0.9 < time.monotonic() - began < 4


def test_watch_of_a_selection_sees_objects_enter_and_leave(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.seed([pod("p", labels={"app": "web"})])
    rv = api.resource_version

    def start() -> Iterator[dict[str, Any]]:
        return kubernetes.watch.Watch().stream(
            core.list_namespaced_pod, "demo", label_selector="app=web", resource_version=rv, timeout_seconds=5
        )

    def act() -> None:
        core.patch_namespaced_pod("p", "demo", {"metadata": {"labels": {"app": "db"}}})
        core.patch_namespaced_pod("p", "demo", {"metadata": {"labels": {"app": "web"}}})

    assert collect_events(api, start, act, 2) == [("DELETED", "p"), ("ADDED", "p")]


def test_watch_from_a_compacted_version_is_gone(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.seed([pod("a")])
    old_rv = api.resource_version
    api.create(pod("b"))
    api.compact()
    with pytest.raises(ApiException) as info:
        list(
            kubernetes.watch.Watch().stream(
                core.list_namespaced_pod, "demo", resource_version=old_rv, timeout_seconds=2
            )
        )
    assert info.value.status == 410
    status, body = raw_get(api, f"/api/v1/namespaces/demo/pods?watch=1&resourceVersion={old_rv}")
    event = json.loads(body.splitlines()[0]) if isinstance(body, str) else body
    assert status == 200
    assert (event["type"], event["object"]["code"]) == ("ERROR", 410)


def test_raw_watch_stream_with_preload_disabled(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.seed([pod("a"), pod("b")])
    response = core.list_namespaced_pod("demo", watch=True, timeout_seconds=1, _preload_content=False)
    lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "a"), ("ADDED", "b")]


# --- failure injection and request log ----------------------------------------------------------------------


def test_fail_injects_errors_a_number_of_times(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.fail(r"/namespaces$", status=503, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as info:
            core.list_namespace()
        assert info.value.status == 503
        assert error_body(info.value)["kind"] == "Status"
    assert core.list_namespace().items == []


def test_fail_until_cleared(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.fail("/api/v1/nodes")
    for _ in range(3):
        with pytest.raises(ApiException) as info:
            core.list_node()
        assert info.value.status == 500
    api.clear_failures()
    assert core.list_node().items == []


def test_delay_makes_requests_time_out(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.delay("/api/v1/nodes", 1.0)
    with pytest.raises((urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.MaxRetryError)) as info:
        core.list_node(_request_timeout=0.2)
    assert "Read timed out" in str(info.value)
    api.clear_failures()
    assert core.list_node(_request_timeout=2).items == []


def test_request_log(api: KubeAPI, core: kubernetes.client.CoreV1Api) -> None:
    api.clear_requests()
    core.list_namespaced_pod("demo", label_selector="a=b", limit=5)
    method, path, query = api.requests[-1]
    assert (method, path) == ("GET", "/api/v1/namespaces/demo/pods")
    assert query == {"labelSelector": "a=b", "limit": "5"}


def test_request_log_is_bounded() -> None:
    with KubeAPI(request_log_limit=3) as server:
        for _ in range(5):
            raw_get(server, "/healthz")
        assert len(server.requests) == 3


# --- helpers, seeding, files -------------------------------------------------------------------------------


def test_helpers_without_http() -> None:
    server = KubeAPI()  # not started: helpers still work
    created = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    assert created["metadata"]["namespace"] == "default"
    fetched = server.get("v1", "configmaps", "cm", "default")
    assert fetched is not None
    fetched["data"] = {"k": "v"}
    updated = server.update(fetched)
    assert updated["data"] == {"k": "v"}
    with pytest.raises(ApiError) as info:
        server.update(fetched)  # stale resourceVersion
    assert (info.value.code, info.value.reason) == (409, "Conflict")
    assert [o["metadata"]["name"] for o in server.list("v1", "ConfigMap")] == ["cm"]
    assert server.delete("v1", "ConfigMap", "cm", "default") is not None
    assert server.get("v1", "ConfigMap", "cm", "default") is None
    with server:
        core = kubernetes.client.CoreV1Api(server.api_client())
        assert core.list_config_map_for_all_namespaces().items == []


def test_helper_update_writes_status_of_subresource_kinds(api: KubeAPI) -> None:
    api.add_crd("example.com", "v1", "Widget", "widgets")
    widget = api.create(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "demo"},
            "status": {"a": 1},
        }
    )
    assert widget["status"] == {"a": 1}  # helpers keep status, unlike HTTP create
    widget["status"] = {"a": 2}
    assert api.update(widget)["status"] == {"a": 2}


def test_load_dir(api: KubeAPI, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n---\n"
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: demo}\n"
    )
    (tmp_path / "sub" / "crd.yml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: widgets.example.com}\n"
        "spec:\n  group: example.com\n  scope: Namespaced\n"
        "  names: {kind: Widget, plural: widgets}\n"
        "  versions: [{name: v1, served: true, storage: true}]\n"
    )
    (tmp_path / "list.json").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
                    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}},
                ],
            }
        )
    )
    (tmp_path / "ignored.txt").write_text("not: an object")
    loaded = api.load_dir(tmp_path)
    assert len(loaded) == 5
    custom = kubernetes.client.CustomObjectsApi(api.api_client())
    widgets = custom.list_namespaced_custom_object("example.com", "v1", "demo", "widgets")
    assert [w["metadata"]["name"] for w in widgets["items"]] == ["w"]
    assert [n["metadata"]["name"] for n in api.list("v1", "nodes")] == ["n1", "n2"]


def test_serve_cli_helper(tmp_path: Path) -> None:
    (tmp_path / "objects").mkdir()
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: seeded}\n"
    (tmp_path / "objects" / "ns.yaml").write_text(namespace)
    kubeconfig = tmp_path / "kubeconfig"
    code = "import sys; from clusterpulse_testing.kube_api import serve; serve(sys.argv[1], 0, sys.argv[2])"
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "objects"), str(kubeconfig)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(Path(__file__).resolve().parents[2]),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        assert client.configuration.host == url
        names = [n.metadata.name for n in kubernetes.client.CoreV1Api(client).list_namespace().items]
        assert names == ["seeded"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT)
