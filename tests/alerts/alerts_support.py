"""Shared helpers of the alerts tests: a managed cluster, a hub, a Manager on real Redis."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import redis
from clusterpulse_alerts.crd import ALERT_RULE
from clusterpulse_alerts.plugin import AlertsPlugin
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager
from clusterpulse_core.serde import loads

NAMESPACE = "clusterpulse"
TOKEN = "alerts-token"
GROUP_VERSION = "clusterpulse.io/v1alpha1"
CUSTOM_API_VERSION = "botany.example.io/v1"
#: Bound of every wait: one reconcile against loopback servers, each call of which the manager's
#: ``request_timeout`` bounds; a loaded machine slows it, only a broken path exhausts it.
WAIT = CoreSettings().request_timeout


def node(name: str, ready: bool = True, cpu: str = "4", memory: str = "16Gi") -> dict[str, Any]:
    """A node with a Ready condition."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if ready else "PLEG not healthy",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ],
        },
    }


def cactus(name: str, phase: str) -> dict[str, Any]:
    """One object of the custom type the MetricSource collects."""
    return {
        "apiVersion": CUSTOM_API_VERSION,
        "kind": "Cactus",
        "metadata": {"name": name, "namespace": "garden"},
        "spec": {"arms": 2},
        "status": {"phase": phase},
    }


def cactus_crd() -> dict[str, Any]:
    """The CRD of the custom type on the managed cluster."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "cacti.botany.example.io"},
        "spec": {
            "group": "botany.example.io",
            "scope": "Namespaced",
            "names": {"kind": "Cactus", "plural": "cacti", "singular": "cactus", "listKind": "CactusList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


def managed_objects(*extra: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Two Ready nodes and a namespace, plus ``extra``."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        node("node-a"),
        node("node-b"),
        *[dict(e) for e in extra],
    ]


def secret(name: str) -> dict[str, Any]:
    """The hub Secret holding the managed cluster's token and the CA of the emulators' HTTPS."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {
            "token": base64.b64encode(TOKEN.encode()).decode(),
            "ca.crt": base64.b64encode(loopback_ca().ca_pem.encode()).decode(),
        },
    }


def cluster_connection(name: str, endpoint: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ClusterConnection to ``endpoint``."""
    spec: dict[str, Any] = {"endpoint": endpoint, "credentialsRef": {"name": f"{name}-token"}}
    if labels:
        spec["labels"] = dict(labels)
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "ClusterConnection",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def alert_rule(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """An AlertRule object."""
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "AlertRule",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": dict(spec),
    }


class FakeMonotonic:
    """The engine's monotonic clock, moved by the test (``for`` without waiting)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        """Move forward."""
        with self.lock:
            self.now += seconds


class EventTap:
    """Subscribed to ``cluster-events``: every alert event published, in order."""

    def __init__(self, client: redis.Redis) -> None:
        self.pubsub = client.pubsub()
        self.pubsub.subscribe("cluster-events")
        self.seen: list[dict[str, Any]] = []
        eventually(lambda: self.pubsub.get_message(timeout=0.1), "the subscription", timeout=WAIT)

    def drain(self) -> list[dict[str, Any]]:
        """Read what arrived; alert events only."""
        while True:
            message = self.pubsub.get_message(timeout=0.2)
            if message is None:
                break
            if message["type"] == "message":
                event = loads(message["data"])
                if str(event["type"]).startswith("alert."):
                    self.seen.append(event)
        return self.seen

    def close(self) -> None:
        """Unsubscribe."""
        self.pubsub.close()


@attrs.define
class Controller:
    """A running Manager over the hub, with the alerts plugin's clock replaced."""

    manager: Manager
    plugin: AlertsPlugin
    clock: FakeMonotonic

    def stop(self) -> None:
        """Stop the manager (plugins stop, store closes)."""
        self.manager.stop()


def start_controller(
    hub: Any,
    redis_url: str,
    tmp_path: Path,
    plugins: tuple[str, ...],
    alerts: str = "",
    clock: FakeMonotonic | None = None,
) -> Controller:
    """Load the plugins from a config file, swap the engine clock, start a Manager and wait for sync."""
    names = ", ".join(f'"{p}"' for p in plugins)
    text = (
        f'[clusterpulse]\nplugins = [{names}]\nnamespace = "{NAMESPACE}"\n'
        'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n[plugins.alerts]\nevaluation_interval = 0.05\n'
        f"status_interval = 0.2\n{alerts}\n"
    )
    config_file = tmp_path / f"clusterpulse-{time.monotonic_ns()}.toml"
    config_file.write_text(text)
    config, host = load(str(config_file), env={})
    plugin = host.plugin("alerts")
    assert isinstance(plugin, AlertsPlugin)
    clock = clock or FakeMonotonic()
    plugin.engine.monotonic = clock
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    manager = Manager(runtime, identity="test")
    manager.start()
    assert manager.wait_synced(30.0), "informers did not sync"
    return Controller(manager, plugin, clock)


def reconciles(manager: Manager, controller: str) -> float:
    """Finished reconciles of one controller (any result)."""
    total = 0.0
    for metric in manager.runtime.metrics.collect():
        if metric.name == "controller_runtime_reconcile":
            total += sum(
                s.value
                for s in metric.samples
                if s.name == "controller_runtime_reconcile_total" and s.labels.get("controller") == controller
            )
    return total


def cycle(manager: Manager, controller: str = "clusterconnection") -> None:
    """Resync and wait until one more reconcile of ``controller`` finished."""
    before = reconciles(manager, controller)
    manager.resync()
    eventually(lambda: reconciles(manager, controller) > before, f"a {controller} reconcile", timeout=WAIT)


def alert_hashes(client: redis.Redis, cluster: str) -> dict[str, dict[str, str]]:
    """``alerts:<cluster>:*`` as id -> fields."""
    found = {}
    for key in client.scan_iter(match=f"alerts:{cluster}:*"):
        text = key.decode()
        found[text.split(":", 2)[2]] = {k.decode(): v.decode() for k, v in client.hgetall(key).items()}
    return found


def hub_api(kube_api: Callable[..., Any]) -> Any:
    """A hub serving the ClusterConnection, MetricSource and AlertRule kinds."""
    from clusterpulse_cluster.crd import CLUSTER_CONNECTION
    from clusterpulse_metricsource.crd import METRIC_SOURCE

    api = kube_api()
    for kind in (CLUSTER_CONNECTION, METRIC_SOURCE, ALERT_RULE):
        api.add_crd(kind.group, kind.version, kind.kind, kind.plural, short_names=kind.short_names)
    api.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    return api
