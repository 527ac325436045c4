"""Redis backend throughput: one reconcile of a 500-node cluster plus 1,000 custom resources.

Prints the keys/s of ``RedisStore.store`` next to a raw pipelined redis-py ``SET`` of the same
number of keys and the same number of bytes, measured in the same run against the same
redis-server, rounds alternating, and the ratio of the medians (target: at least 70 %). Both
sides read replies with hiredis when it is installed (a dependency of clusterpulse-redis).

Run: ``python benchmarks/bench_redis_store.py`` (starts its own redis-server).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from datetime import UTC, datetime

import redis
from clusterpulse_model import (
    ClusterMetrics,
    ClusterSpecRecord,
    ClusterStatusRecord,
    CollectedResource,
    CustomResourceCollection,
    NodeCondition,
    NodeMetrics,
    Taint,
)
from clusterpulse_model.pieces import (
    ClusterInfoPiece,
    ClusterLabelsPiece,
    ClusterMetricsPiece,
    ClusterSpecPiece,
    ClusterStatusPiece,
    CustomResourcesPiece,
    EventPiece,
    NodesPiece,
)
from clusterpulse_redis import RedisSettings, RedisStore
from clusterpulse_testing.servers import redis_process
from redis.utils import HIREDIS_AVAILABLE

from clusterpulse_core.pieces import Piece

NODES = 500
CUSTOM_RESOURCES = 1000
ROUNDS = 15
TARGET = 0.70
NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _node(i: int) -> NodeMetrics:
    return NodeMetrics(
        name=f"worker-{i:04d}",
        timestamp=NOW,
        status="Ready",
        roles=("worker",),
        conditions=(
            *(
                NodeCondition(t, "False", "Kubelet" + t, f"kubelet reports {t}", NOW)
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ),
            NodeCondition("Ready", "True", "KubeletReady", "kubelet is posting ready status", NOW),
        ),
        cpu_capacity=16.0,
        memory_capacity=64 * 2**30,
        storage_capacity=200 * 2**30,
        pods_capacity=250,
        cpu_allocatable=15.5,
        memory_allocatable=62 * 2**30,
        storage_allocatable=190 * 2**30,
        pods_allocatable=250,
        cpu_requested=7.25,
        memory_requested=20 * 2**30,
        cpu_usage_percent=46.77,
        memory_usage_percent=32.26,
        pods_running=40,
        pods_pending=1,
        pods_total=42,
        kernel_version="5.15.0-105-generic",
        os_image="Ubuntu 22.04.4 LTS",
        container_runtime="containerd://1.7.13",
        kubelet_version="v1.29.2",
        architecture="amd64",
        labels={
            "kubernetes.io/hostname": f"worker-{i:04d}",
            "kubernetes.io/arch": "amd64",
            "node-role.kubernetes.io/worker": "",
            "topology.kubernetes.io/zone": f"zone-{i % 3}",
        },
        annotations={"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        taints=(Taint("dedicated", "batch", "NoSchedule"),),
        internal_ip=f"10.0.{i // 250}.{i % 250}",
        hostname=f"worker-{i:04d}",
        images_count=40,
        volumes_attached=2,
    )


def reconcile_pieces(cluster: str) -> list[Piece]:
    """One pull reconcile of a 500-node cluster and one MetricSource collection of 1,000 resources."""
    namespaces = tuple(f"team-{i:03d}" for i in range(100))
    resources = tuple(
        CollectedResource(
            id=f"uid-{i:06d}",
            name=f"vm-{i:04d}",
            namespace=namespaces[i % 100],
            labels={"app": f"app-{i % 20}"},
            values={"cpu": 4, "memory": 8.0 * 2**30, "phase": "Running", "ready": True},
        )
        for i in range(CUSTOM_RESOURCES)
    )
    return [
        ClusterSpecPiece(cluster, ClusterSpecRecord("Big", "https://api.big:6443", labels={"env": "prod"})),
        ClusterLabelsPiece(cluster, {"env": "prod"}),
        NodesPiece(cluster, tuple(_node(i) for i in range(NODES))),
        ClusterMetricsPiece(
            cluster,
            ClusterMetrics(
                NOW,
                NODES,
                NODES,
                len(namespaces),
                namespaces,
                NODES * 42,
                NODES * 40,
                NODES * 16.0,
                NODES * 64 * 2**30,
                800,
            ),
        ),
        ClusterInfoPiece(cluster, {"api_url": "https://api.big:6443", "version": "v1.29.2", "platform": "linux/amd64"}),
        CustomResourcesPiece(
            cluster, CustomResourceCollection("default/vms", cluster, NOW, CUSTOM_RESOURCES, resources=resources)
        ),
        ClusterStatusPiece(cluster, ClusterStatusRecord("healthy", "Cluster is reachable", NOW)),
        EventPiece("cluster.reconciled", cluster, {"health": "healthy", "display_name": "Big"}, timestamp=NOW),
    ]


def stored_bytes(client: redis.Redis) -> tuple[int, int]:
    """(keys, bytes of values) in the database."""
    keys = total = 0
    for key in client.scan_iter(count=1000):
        keys += 1
        kind = client.type(key)
        if kind == b"string":
            total += int(client.strlen(key))  # type: ignore[arg-type]
        elif kind == b"hash":
            total += sum(len(v) for v in client.hgetall(key).values())  # type: ignore[union-attr]
        elif kind in (b"set", b"zset", b"list"):
            members = (
                client.smembers(key)
                if kind == b"set"
                else client.zrange(key, 0, -1)
                if kind == b"zset"
                else client.lrange(key, 0, -1)
            )
            total += sum(len(m) for m in members)  # type: ignore[union-attr]
    return keys, total


def main() -> int:
    binary = shutil.which("redis-server")
    if not binary:
        print("redis-server is not installed: sudo apt-get install -y redis-server", file=sys.stderr)
        return 2
    server = redis_process(binary).start()
    try:
        url = f"redis://127.0.0.1:{server.port}/0"
        client = redis.Redis.from_url(url)
        store = RedisStore(RedisSettings(url=url), clock=lambda: NOW)
        pieces = reconcile_pieces("big")

        client.flushall()
        store.store(pieces)
        keys, size = stored_bytes(client)
        value = b"x" * (size // keys)
        raw_keys = [f"raw:{i}".encode() for i in range(keys)]

        ours, raw = [], []
        for _ in range(ROUNDS):
            client.flushall()
            started = time.perf_counter()
            store.store(pieces)
            ours.append(time.perf_counter() - started)

            client.flushall()
            started = time.perf_counter()
            pipe = client.pipeline(transaction=False)
            for key in raw_keys:
                pipe.set(key, value)
            pipe.execute()
            raw.append(time.perf_counter() - started)

        ours_rate = keys / statistics.median(ours)
        raw_rate = keys / statistics.median(raw)
        ratio = ours_rate / raw_rate
        parser = "hiredis" if HIREDIS_AVAILABLE else "pure Python"
        print(
            f"one reconcile: {NODES} nodes + {CUSTOM_RESOURCES} custom resources "
            f"= {keys} keys, {size / 1e6:.2f} MB of values (median of {ROUNDS} rounds; "
            f"redis-py reply parser: {parser})"
        )
        print(f"RedisStore.store      : {ours_rate:10.0f} keys/s  ({statistics.median(ours) * 1000:.1f} ms)")
        print(f"raw pipelined SET     : {raw_rate:10.0f} keys/s  ({statistics.median(raw) * 1000:.1f} ms)")
        print(
            f"ratio                 : {ratio:10.1%}  (target >= {TARGET:.0%}: "
            f"{'met' if ratio >= TARGET else 'NOT met'})"
        )
        store.close()
        client.close()
        return 0
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main())
