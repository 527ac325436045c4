"""A hub outage never stops storing what was collected.

The trial stopped the hub API for 60 s: pulled clusters kept storing, but a push-mode cluster in
pull fallback stored nothing (its reconcile failed on a hub call before it stored), registry
samples were written four times in the same second (the reconcile failed after storing, and
was retried at once), and MetricSources were not collected (the list of clusters comes from
the hub). Here the hub is stopped while the three run; every reconcile in the outage must
succeed, store exactly once, and a status write the hub could not take is written after it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_testing.hostile import HostileProxy
from fault_support import CC_API, HUB_NAMESPACE, TOKEN, add_cluster, make_hub, managed_objects, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins

ROUNDS = 3  # reconcile rounds of all three objects while the hub is down
RC_API = f"{REGISTRY_CONNECTION.group}/{REGISTRY_CONNECTION.version}"
MS_API = f"{METRIC_SOURCE.group}/{METRIC_SOURCE.version}"
SOURCE_ID = f"{HUB_NAMESPACE}/settings"


def _config_map(value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "default"},
        "data": {"mode": value},
    }


def test_push_fallback_registry_and_metricsource_keep_storing_while_the_hub_is_down(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api, REGISTRY_CONNECTION, METRIC_SOURCE)
    east = kube_api(objects=[*managed_objects("east-node"), _config_map("v0")], require_token=TOKEN)
    add_cluster(hub, "east", east.url)
    # Push mode without an agent (no ingester answers): the controller pulls instead (fallback).
    add_cluster(
        hub,
        "edge",
        kube_api(objects=managed_objects("edge-node"), require_token=TOKEN).url,
        collectionMode="push",
        ingesterAddress="127.0.0.1:9",
    )
    # No ingester runs here, so no hub CA is made: the agents are told plaintext (about the hub, not transport).
    config_file = write_config(
        tmp_path / "config.toml",
        redis_url,
        core={"request_timeout": 2.0},
        plugins={"cluster": {"ingester_tls_enabled": False}},
        enabled=("redis", "cluster", "registry", "metricsource"),
    )
    config, host = load(str(config_file), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client(), timeout=2.0))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    start_plugins(runtime)
    with HostileProxy(kube_api().url, tls=False) as registry:
        registry.respond(r"^/v2/$")
        hub.create(
            {
                "apiVersion": RC_API,
                "kind": "RegistryConnection",
                "metadata": {"name": "images", "namespace": HUB_NAMESPACE},
                "spec": {"endpoint": registry.url, "insecure": True, "monitoring": {"timeout": 2}},
            }
        )
        hub.create(
            {
                "apiVersion": MS_API,
                "kind": "MetricSource",
                "metadata": {"name": "settings", "namespace": HUB_NAMESPACE},
                "spec": {
                    "source": {"apiVersion": "v1", "kind": "ConfigMap", "scope": "Namespaced"},
                    "fields": [{"name": "mode", "path": ".data.mode"}],
                },
            }
        )
        cc_owner, cc_kind = runtime.plugins.kinds["ClusterConnection"]
        objects = {
            "edge": (cc_owner, cc_kind, hub.get(CC_API, cc_kind.plural, "edge", HUB_NAMESPACE)),
            "east": (cc_owner, cc_kind, hub.get(CC_API, cc_kind.plural, "east", HUB_NAMESPACE)),
            "images": (
                "registry",
                REGISTRY_CONNECTION,
                hub.get(RC_API, REGISTRY_CONNECTION.plural, "images", HUB_NAMESPACE),
            ),
            "settings": (
                "metricsource",
                METRIC_SOURCE,
                hub.get(MS_API, METRIC_SOURCE.plural, "settings", HUB_NAMESPACE),
            ),
        }

        def reconcile(name: str) -> Any:
            owner, kind, obj = objects[name]
            return reconcile_object(runtime, owner, kind, obj)

        def reconciled_events(name: str, kind: str) -> int:
            """How many ``<kind>.reconciled`` events ``name`` stored (one per successful reconcile)."""
            return sum(
                1
                for raw in client.lrange(f"events:{name}", 0, -1)
                if json.loads(raw).get("type") == f"{kind}.reconciled"
            )

        def edge_stored() -> int:
            return reconciled_events("edge", "cluster")

        def collected_mode() -> str:
            return client.get(f"cluster:east:custom:{SOURCE_ID}:resources") or ""

        try:
            for name in ("east", "edge", "images", "settings"):
                assert reconcile(name).ok, name
            # The objects as the informer cache would hold them (with the statuses just written).
            objects = {
                name: (owner, kind, hub.get(kind.api_version, kind.plural, name, HUB_NAMESPACE))
                for name, (owner, kind, _) in objects.items()
            }
            samples = client.zcard("registry:images:metrics")
            registry_events = reconciled_events("images", "registry")
            assert samples == registry_events == 1 and '"v0"' in collected_mode()

            hub.stop()
            failed: list[tuple[str, str]] = []
            for round_ in range(1, ROUNDS + 1):
                before = edge_stored()
                east.update(_config_map(f"v{round_}"))
                for name in ("edge", "images", "settings"):
                    outcome = reconcile(name)
                    if not outcome.ok:
                        failed.append((name, str(outcome.detail)))
                assert edge_stored() == before + 1, "the push-fallback cluster did not store (once)"
                assert f'"v{round_}"' in collected_mode(), "the MetricSource did not collect"
            stored = reconciled_events("images", "registry") - registry_events
            new_samples = client.zcard("registry:images:metrics") - samples
            print(
                f"\nhub down: {ROUNDS} rounds; failed reconciles {failed}; registry reconciles stored {stored} "
                f"(one per reconcile: {ROUNDS}), {new_samples} new samples (identical samples of one second are "
                f"one member); status writes waiting for the hub: {runtime.deferred_statuses}"
            )
            assert not failed
            assert stored == ROUNDS
            assert 1 <= new_samples <= ROUNDS

            hub.start()
            for name in ("edge", "images", "settings"):
                assert reconcile(name).ok, name
            # (A deferred patch is retried only when the reconcile still finds the hub's status out of
            # date: the registry's may rightly not patch again, so the counter is not asserted empty.)
            edge = hub.get(CC_API, cc_kind.plural, "edge", HUB_NAMESPACE)["status"]
            assert edge["phase"] == "Connected", edge
        finally:
            stop_plugins(runtime)
            client.close()
