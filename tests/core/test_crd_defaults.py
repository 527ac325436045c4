"""CRD schema defaults (docs/compatibility.md#r5): the core helper, the kube_api emulator and the runtime."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import kubernetes.client
from clusterpulse_testing.polling import eventually

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.context import ReconcileContext
from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.kinds import ReconcileResult, ResourceKind
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.openapi import apply_defaults
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime, reconcile_object
from clusterpulse_core.runtime.manager import Manager

NAMESPACE = "clusterpulse"
GROUP = "defaults.clusterpulse.io"

SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "default": "pull"},
        "retries": {"type": "integer", "default": 3},
        "rbac": {
            "type": "object",
            "properties": {"filter": {"type": "boolean", "default": True}, "name": {"type": "string"}},
        },
        "collection": {"type": "object", "default": {}, "properties": {"interval": {"type": "integer", "default": 60}}},
        "fields": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "type": {"type": "string", "default": "string"}},
            },
        },
        "extra": {
            "type": "object",
            "additionalProperties": {"type": "object", "properties": {"weight": {"type": "integer", "default": 1}}},
        },
        "note": {"type": "string", "nullable": True, "default": "none"},
        "selector": {"type": "object", "properties": {"matchLabels": {"type": "object"}}},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"apiVersion": {"type": "string"}, "metadata": {"type": "object"}, "spec": SPEC},
}
GADGET = ResourceKind(group=GROUP, version="v1", kind="Gadget", plural="gadgets", schema=SCHEMA)


def test_absent_fields_take_their_defaults_recursively() -> None:
    obj = {
        "spec": {
            "rbac": {"name": "x"},
            "fields": [{"name": "a"}, {"name": "b", "type": "integer"}],
            "extra": {"k": {}, "j": {"weight": 5}},
        }
    }
    original = copy.deepcopy(obj)

    got = apply_defaults(SCHEMA, obj)

    assert got == {
        "spec": {
            "mode": "pull",
            "retries": 3,
            "rbac": {"name": "x", "filter": True},
            "collection": {"interval": 60},  # the defaulted object takes its own nested defaults
            "fields": [{"name": "a", "type": "string"}, {"name": "b", "type": "integer"}],
            "extra": {"k": {"weight": 1}, "j": {"weight": 5}},
            "note": "none",
        }
    }
    assert obj == original  # never modified in place


def test_given_values_win_and_falsy_values_are_kept() -> None:
    obj = {
        "spec": {"mode": "push", "retries": 0, "rbac": {"filter": False}, "collection": {"interval": 30}, "note": None}
    }
    got = apply_defaults(SCHEMA, obj)
    assert got["spec"]["retries"] == 0 and got["spec"]["rbac"] == {"filter": False}
    assert got["spec"]["mode"] == "push" and got["spec"]["collection"] == {"interval": 30}
    assert got["spec"]["note"] is None  # nullable: an explicit null stays


def test_null_takes_the_default_or_is_pruned() -> None:
    got = apply_defaults(SCHEMA, {"spec": {"retries": None, "selector": None, "rbac": {"filter": None}}})
    assert got["spec"]["retries"] == 3 and got["spec"]["rbac"]["filter"] is True
    assert "selector" not in got["spec"]  # a null without a default is pruned, as the API server does


def test_unchanged_objects_are_returned_as_they_are() -> None:
    obj = {
        "spec": {"mode": "pull", "retries": 3, "rbac": {"filter": True}, "collection": {"interval": 60}, "note": "n"}
    }
    assert apply_defaults(SCHEMA, obj) is obj
    assert apply_defaults({"type": "object"}, obj) is obj


def test_the_emulator_defaults_custom_resources_on_create_update_and_patch(kube_api: Any) -> None:
    api = kube_api()
    api.create(crd_manifest(GADGET))
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    objects = kubernetes.client.CustomObjectsApi(api.api_client())

    created = objects.create_namespaced_custom_object(
        GROUP,
        "v1",
        NAMESPACE,
        "gadgets",
        {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"mode": "push"}},
    )
    assert created["spec"] == {"mode": "push", "retries": 3, "collection": {"interval": 60}, "note": "none"}

    created["spec"] = {"rbac": {}}
    replaced = objects.replace_namespaced_custom_object(GROUP, "v1", NAMESPACE, "gadgets", "g", created)
    assert replaced["spec"]["rbac"] == {"filter": True} and replaced["spec"]["mode"] == "pull"

    patched = objects.patch_namespaced_custom_object(
        GROUP, "v1", NAMESPACE, "gadgets", "g", {"spec": {"retries": None}}
    )
    assert patched["spec"]["retries"] == 3  # merge patch removed it; the server defaulted it again
    assert api.get(f"{GROUP}/v1", "gadgets", "g", NAMESPACE)["spec"]["retries"] == 3


class GadgetPlugin:
    """Owns ``Gadget`` and keeps the objects its reconcile receives."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.seen: list[Mapping[str, Any]] = []
        self.lock = threading.Lock()

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        return [GADGET]

    @hookimpl
    def clusterpulse_reconcile(
        self, kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext
    ) -> ReconcileResult | None:
        with self.lock:
            self.seen.append(obj)
        return None


def test_the_runtime_reconciles_with_defaults_a_hub_did_not_apply(kube_api: Any) -> None:
    # A hub whose CRD has no defaults (created before the CRD had them): the object lacks them.
    hub = kube_api()
    hub.add_crd(GROUP, "v1", "Gadget", "gadgets")
    hub.create(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Gadget",
            "metadata": {"name": "old", "namespace": NAMESPACE},
            "spec": {"rbac": {"name": "r"}},
        }
    )
    plugin = GadgetPlugin()
    config = Config(
        core=CoreSettings(plugins=(), namespace=NAMESPACE, metrics_bind_address="0", health_probe_bind_address="0")
    )
    runtime = build_runtime(config, PluginHost([], extra={"gadgets": plugin}), hub=KubeClient(hub.api_client()))
    stored = hub.get(f"{GROUP}/v1", "gadgets", "old", NAMESPACE)
    assert "filter" not in stored["spec"]["rbac"]

    assert reconcile_object(runtime, "gadgets", GADGET, stored).ok  # `run --once`
    manager = Manager(runtime, identity="defaults-test")  # the controllers
    manager.start()
    try:
        # The manager's first reconcile: its informer's list and the reconcile, each call bounded
        # by request_timeout.
        eventually(lambda: len(plugin.seen) >= 2, "the controller's reconcile", 2 * config.core.request_timeout)
    finally:
        manager.stop()
    assert len(plugin.seen) >= 2
    for obj in plugin.seen:
        assert obj["spec"]["rbac"] == {"name": "r", "filter": True}
        assert obj["spec"]["retries"] == 3
    assert "filter" not in hub.get(f"{GROUP}/v1", "gadgets", "old", NAMESPACE)["spec"]["rbac"]
