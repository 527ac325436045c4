"""Two sharded managers with the real cluster and redis plugins, storing into a Redis Cluster."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import three_node
from cluster_support import HUB_NAMESPACE, cluster_connection, secret

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


@pytest.fixture
def managers(hub: Any, redis_cluster: RedisClusterProcesses, tmp_path: Path) -> Iterator[list[Manager]]:
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = ["redis", "cluster"]\nnamespace = "{HUB_NAMESPACE}"\nsharding = true\n'
        'lease_duration = 2.0\nrenew_deadline = 1.5\nretry_period = 0.25\nshard_handover_delay = 30.0\n'
        'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\n'
        f'[plugins.redis]\nurl = "{redis_cluster.url}"\n')
    made = []
    for identity in ("replica-a", "replica-b"):
        config, host = load(str(config_file), env={})
        made.append(Manager(build_runtime(config, host, hub=KubeClient(hub.api_client())), identity))
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
