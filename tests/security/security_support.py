"""Helpers of the security tests: a hub with ClusterConnections reconciled in-process, hostile servers."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clusterpulse_cluster.crd import CLUSTER_CONNECTION

from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object

NAMESPACE = "clusterpulse"
TOKEN = "security-test-token"
CC_API = f"{CLUSTER_CONNECTION.group}/{CLUSTER_CONNECTION.version}"


def node(name: str) -> dict[str, Any]:
    """A Ready node."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def managed_objects() -> list[dict[str, Any]]:
    """A managed cluster: one namespace, one node."""
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}, node("node-a")]


def secret(
    name: str, data: Mapping[str, str], namespace: str = NAMESPACE, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A hub Secret with ``data`` (plain text, encoded here) and ``labels``."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


class ClusterHub:
    """A hub emulator with the ClusterConnection CRD and a runtime (redis + cluster plugins) reconciling on it."""

    def __init__(self, hub: Any, runtime: Runtime) -> None:
        self.hub = hub
        self.runtime = runtime

    def add(
        self, name: str, endpoint: str, data: Mapping[str, str], labels: Mapping[str, str] | None = None, **spec: Any
    ) -> None:
        """The Secret ``<name>-token`` with ``data`` (and ``labels``), a ClusterConnection to ``endpoint`` using it."""
        self.hub.create(secret(f"{name}-token", data, labels=labels))
        self.hub.create(
            {
                "apiVersion": CC_API,
                "kind": "ClusterConnection",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"endpoint": endpoint, "credentialsRef": {"name": f"{name}-token"}, **spec},
            }
        )

    def reconcile(self, name: str) -> dict[str, Any]:
        """Reconcile ``name`` once as the runtime does; its status afterwards."""
        obj = self.hub.get(CC_API, "clusterconnections", name, NAMESPACE)
        reconcile_object(self.runtime, "cluster", CLUSTER_CONNECTION, obj)
        return dict(self.hub.get(CC_API, "clusterconnections", name, NAMESPACE).get("status") or {})

    def events(self, name: str) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the hub Events about ``name``."""
        return [
            (e["type"], e["reason"], e.get("message", ""))
            for e in self.hub.list("v1", "events", NAMESPACE)
            if e["involvedObject"]["name"] == name
        ]

    def close(self) -> None:
        """Close the runtime's clients."""
        self.runtime.pool.close()
        self.runtime.store.close()


def make_cluster_hub(kube_api: Any, redis_url: str, tmp_path: Path, core: str = "") -> ClusterHub:
    """A :class:`ClusterHub` on a fresh hub emulator (HTTPS with the loopback CA); ``core``: more
    ``[clusterpulse]`` lines of the config."""
    hub = kube_api()
    kind = CLUSTER_CONNECTION
    hub.add_crd(kind.group, kind.version, kind.kind, kind.plural, short_names=kind.short_names)
    hub.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = ["redis", "cluster"]\nnamespace = "{NAMESPACE}"\n'
        f'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\n{core}\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n'
    )
    config, host = load(str(config_file), env={})
    return ClusterHub(hub, build_runtime(config, host, hub=KubeClient(hub.api_client())))


def condition(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The status condition of type ``kind``, or None."""
    for found in status.get("conditions") or ():
        if found.get("type") == kind:
            return dict(found)
    return None
