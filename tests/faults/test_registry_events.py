"""RegistryConnection state changes: Events (Connected, ConnectionFailed, Recovered) and the Ready
condition, with a registry that answers, then drips past its deadline, then answers again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_testing.hostile import HostileProxy
from fault_support import HUB_NAMESPACE, make_hub, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins


def test_registry_health_changes_record_events_and_the_ready_condition(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api, REGISTRY_CONNECTION)
    api = f"{REGISTRY_CONNECTION.group}/{REGISTRY_CONNECTION.version}"
    with HostileProxy(kube_api().url, tls=False) as registry:
        registry.respond(r"^/v2/$")
        hub.create(
            {
                "apiVersion": api,
                "kind": "RegistryConnection",
                "metadata": {"name": "images", "namespace": HUB_NAMESPACE},
                "spec": {"endpoint": registry.url, "insecure": True, "monitoring": {"timeout": 1}},
            }
        )
        config, host = load(str(write_config(tmp_path / "c.toml", redis_url, enabled=("redis", "registry"))), env={})
        runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
        start_plugins(runtime)

        def reconcile() -> dict[str, Any]:
            obj = hub.get(api, REGISTRY_CONNECTION.plural, "images", HUB_NAMESPACE)
            reconcile_object(runtime, "registry", REGISTRY_CONNECTION, obj)
            status = hub.get(api, REGISTRY_CONNECTION.plural, "images", HUB_NAMESPACE)["status"]
            return dict(status["conditions"][0])

        try:
            assert reconcile()["status"] == "True"
            registry.clear()
            registry.drip(r"^/v2/", bytes_per_second=1)
            down = reconcile()
            assert (down["status"], down["reason"]) == ("False", "ConnectionFailed")
            registry.clear()
            registry.respond(r"^/v2/$")
            assert reconcile()["status"] == "True"
            events = sorted(e["reason"] for e in hub.list("v1", "events", HUB_NAMESPACE))
            print(f"\nregistry events: {events}; while dripping: {down['message']}")
            assert events == ["Connected", "ConnectionFailed", "Recovered"]
        finally:
            stop_plugins(runtime)
