"""Two sharded managers with the real cluster, metricsource and redis plugins (Redis Cluster, plain Redis)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import three_node
from cluster_support import HUB_NAMESPACE, cluster_connection, secret

from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager
from clusterpulse_core.testing.servers import RedisClusterProcesses

CLUSTERS = 12


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def make_managers(hub: Any, redis_url: str, tmp_path: Path, plugins: str) -> list[Manager]:
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = [{plugins}]\nnamespace = "{HUB_NAMESPACE}"\nsharding = true\n'
        'lease_duration = 2.0\nrenew_deadline = 1.5\nretry_period = 0.25\nshard_handover_delay = 30.0\n'
        'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\nshutdown_grace = 5.0\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n')
    made = []
    for identity in ("replica-a", "replica-b"):
        config, host = load(str(config_file), env={})
        made.append(Manager(build_runtime(config, host, hub=KubeClient(hub.api_client())), identity))
    return made


@pytest.fixture
def managers(hub: Any, redis_cluster: RedisClusterProcesses, tmp_path: Path) -> Iterator[list[Manager]]:
    made = make_managers(hub, redis_cluster.url, tmp_path, '"redis", "cluster"')
    yield made
    for manager in made:
        manager.stop()


def reconciles(manager: Manager) -> float:
    return manager.runtime.metrics.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "clusterconnection", "result": "requeue_after"}) or 0.0


def test_sharded_replicas_split_the_clusters_and_store_into_a_redis_cluster(
        hub: Any, kube_api: Callable[..., Any], redis_cluster: RedisClusterProcesses,
        managers: list[Manager]) -> None:
    managed = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    for manager in managers:
        manager.start()
    wait_for(lambda: all(m.shard is not None and len(m.shard.members) == 2 and m.shard.published == m.shard.members
                         for m in managers), "both replicas agree on the ring")

    # Created after the ring settled: each is reconciled at once, by its owner only.
    hub.create(secret("fleet-token", three_node.TOKEN))
    for index in range(CLUSTERS):
        hub.create(cluster_connection(f"c{index}", {"endpoint": managed.url,
                                                    "credentialsRef": {"name": "fleet-token"}}))
    client = redis.RedisCluster(host="127.0.0.1", port=redis_cluster.ports[0])
    try:
        wait_for(lambda: client.scard("clusters:all") == CLUSTERS and sum(map(reconciles, managers)) == CLUSTERS,
                 "every cluster reconciled and stored")
        time.sleep(1.0)  # nothing else is due within the 30 s interval: no second reconcile anywhere
        counts = [reconciles(manager) for manager in managers]
        assert sum(counts) == CLUSTERS and all(count > 0 for count in counts), counts
        owned = [sum(1 for index in range(CLUSTERS)
                     if m.shard is not None and m.shard.owns(m.controllers["ClusterConnection"].ref_of(
                         {"metadata": {"namespace": HUB_NAMESPACE, "name": f"c{index}"}})))
                 for m in managers]
        assert owned == counts  # each replica reconciled exactly the clusters the ring gives it
        for index in range(CLUSTERS):
            assert client.exists(f"cluster:c{index}:metrics") == 1
        assert hub.get("clusterpulse.io/v1alpha1", "clusterconnections", "c0", HUB_NAMESPACE)[
            "status"]["phase"] == "Connected"
    finally:
        client.close()


MS_API = "clusterpulse.io/v1alpha1"
POD_SOURCE = {"source": {"apiVersion": "v1", "kind": "Pod"}, "fields": [{"name": "phase", "path": ".status.phase"}],
              "rbac": {"resourceTypeName": "pods"}}


def test_sharded_replicas_collect_a_metricsource_each_from_its_own_clusters(
        hub: Any, kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> None:
    """Every replica collects the MetricSource from the clusters it holds; the holder of the
    MetricSource adds the shares up into its status."""
    managed = kube_api(objects=three_node.objects(), version=three_node.VERSION, require_token=three_node.TOKEN)
    hub.add_crd("clusterpulse.io", "v1alpha1", "MetricSource", "metricsources", short_names=("ms",))
    managers = make_managers(hub, redis_url, tmp_path, '"redis", "cluster", "metricsource"')
    client = redis.Redis.from_url(redis_url)
    try:
        for manager in managers:
            manager.start()
        wait_for(lambda: all(m.shard is not None and len(m.shard.members) == 2
                             and m.shard.published == m.shard.members for m in managers), "the ring settles")
        # Created after the ring settled: each cluster starts at once on its owner.
        hub.create(secret("fleet-token", three_node.TOKEN))
        names = [f"m{index}" for index in range(8)]
        for name in names:
            hub.create(cluster_connection(name, {"endpoint": managed.url,
                                                 "credentialsRef": {"name": "fleet-token"}}))

        def connected() -> bool:
            items = hub.list(MS_API, "clusterconnections", HUB_NAMESPACE)
            return len(items) == len(names) and all((o.get("status") or {}).get("phase") == "Connected"
                                                    for o in items)

        wait_for(connected, "every cluster connected")

        def held_by(manager: Manager) -> set[str]:
            shard = manager.shard
            assert shard is not None
            return {name for name in names if shard.holds(ObjectRef("ClusterConnection", HUB_NAMESPACE, name))}

        wait_for(lambda: set().union(*map(held_by, managers)) == set(names), "every cluster held")
        holdings = {manager.identity: held_by(manager) for manager in managers}
        assert all(holdings.values()) and not set.intersection(*holdings.values()), holdings

        hub.create({"apiVersion": MS_API, "kind": "MetricSource",
                    "metadata": {"name": "pods", "namespace": HUB_NAMESPACE}, "spec": POD_SOURCE})

        def status() -> dict[str, Any]:
            return hub.get(MS_API, "metricsources", "pods", HUB_NAMESPACE).get("status") or {}

        wait_for(lambda: set(status().get("shards") or {}) == set(holdings), "both replicas report their share")
        # Edit the spec: both reconcile again, and the holder now adds up both shares.
        current = hub.get(MS_API, "metricsources", "pods", HUB_NAMESPACE)
        current["spec"]["collection"] = {"timeoutSeconds": 20}
        hub.update(current)
        per_cluster = len(three_node.PODS)
        wait_for(lambda: any(c.get("observedGeneration") == 2 for c in status().get("conditions") or [])
                 and status().get("clustersCollected") == len(names), "the holder's status adds up both shares")
        final = status()
        assert final["phase"] == "Active", final
        assert final["resourcesCollected"] == per_cluster * len(names), final
        assert final["errorsLastRun"] == 0, final
        # Each replica collected exactly the clusters whose ClusterConnection it holds.
        shares = {member: set(share["clusters"]) for member, share in final["shards"].items()}
        assert shares == holdings, (shares, holdings)
        for name in names:
            stored = client.get(f"cluster:{name}:custom:{HUB_NAMESPACE}/pods:resources")
            assert stored is not None, name
            assert json.loads(stored)["resourceCount"] == per_cluster
        assert client.exists(f"metricsource:{HUB_NAMESPACE}:pods") == 1
        # Both replicas wrote their share into the status; one holds the MetricSource (the totals).
        writers = {record.user_agent for record in hub.writes
                   if record.path.endswith("/metricsources/pods/status")}
        assert writers == {f"clusterpulse/{manager.identity}" for manager in managers}
        holders = [m for m in managers if m.shard is not None
                   and m.shard.holds(ObjectRef("MetricSource", HUB_NAMESPACE, "pods"))]
        assert len(holders) == 1
    finally:
        for manager in managers:
            manager.stop()
        client.close()
