"""The Redis backend against a real three-node Redis Cluster: same keys, any node, a node restart."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
import redis
from clusterpulse_model.pieces import ClusterDeletion, MetricSourceDeletion
from clusterpulse_redis import RedisSettings, RedisStore, RedisStoreError
from clusterpulse_redis.connection import connect, is_cluster
from clusterpulse_testing.polling import STARTUP, eventually
from clusterpulse_testing.servers import RedisClusterProcesses
from redis_seed import T0, cluster_reconcile, custom_data, metricsource, registry_reconcile

from clusterpulse_core.pieces import Piece


def contents(client: redis.Redis | redis.RedisCluster) -> dict[bytes, tuple[str, object]]:
    """Every key (of every node) with its type and value (hash fields unordered, unlike ``DUMP``)."""
    found: dict[bytes, tuple[str, object]] = {}
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()  # type: ignore[union-attr]
        value: object
        if kind == "string":
            value = client.get(key)
        elif kind == "hash":
            value = client.hgetall(key)
        elif kind == "set":
            value = client.smembers(key)
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        else:
            value = client.lrange(key, 0, -1)
        found[key] = (kind, value)
    return found


def keys_per_node(cluster: RedisClusterProcesses) -> list[int]:
    counts = []
    for port in cluster.ports:
        with redis.Redis(host="127.0.0.1", port=port) as node:
            counts.append(int(node.dbsize()))  # type: ignore[arg-type]
    return counts


@pytest.fixture
def cluster_store(redis_cluster: RedisClusterProcesses) -> Iterator[Callable[..., RedisStore]]:
    made: list[RedisStore] = []

    def factory(**settings: object) -> RedisStore:
        options: dict[str, object] = {
            "url": redis_cluster.url,
            "retry_backoff_base": 0.01,
            "retry_backoff_cap": 0.05,
            "socket_timeout": 2.0,
            "socket_connect_timeout": 1.0,
        }
        options.update(settings)
        store = RedisStore(RedisSettings(**options), clock=lambda: T0)  # type: ignore[arg-type]
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def cluster_client(redis_cluster: RedisClusterProcesses) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster(host="127.0.0.1", port=redis_cluster.ports[0])
    yield client
    client.close()


def fleet() -> list[Piece]:
    return [
        *cluster_reconcile("c1", nodes=20),
        *cluster_reconcile("c2"),
        *registry_reconcile("r1"),
        metricsource("default", "vms", "virtualmachines"),
        *custom_data("c1", "default/vms"),
    ]


def test_settings_select_a_cluster() -> None:
    assert is_cluster(RedisSettings(url="redis+cluster://h:7000"))
    assert is_cluster(RedisSettings(url="rediss+cluster://h:7000"))
    assert is_cluster(RedisSettings(cluster=True))
    assert not is_cluster(RedisSettings(url="redis://h:6379/0"))
    with pytest.raises(ValueError, match=r"plugins.redis.db: a Redis Cluster has only database 0, got 2"):
        connect(RedisSettings(cluster=True, db=2, host="127.0.0.1", port=1))


def test_a_cluster_holds_exactly_the_keys_one_server_holds(
    cluster_store: Callable[..., RedisStore],
    cluster_client: redis.RedisCluster,
    store: RedisStore,
    raw: redis.Redis,
    redis_cluster: RedisClusterProcesses,
) -> None:
    pieces = fleet()
    store.store(pieces)
    clustered = cluster_store()
    clustered.store(pieces)
    assert clustered.ready() is None and clustered.address.startswith("cluster 127.0.0.1:")

    single = contents(raw)
    assert contents(cluster_client) == contents(raw)  # same names (no hash tags), same values and types
    assert all(count > 0 for count in keys_per_node(redis_cluster))  # spread over every node
    assert sum(keys_per_node(redis_cluster)) == len(single)


def test_host_and_port_with_cluster_true(
    cluster_store: Callable[..., RedisStore], cluster_client: redis.RedisCluster, redis_cluster: RedisClusterProcesses
) -> None:
    clustered = cluster_store(url="", cluster=True, host="127.0.0.1", port=redis_cluster.ports[1])
    clustered.store(cluster_reconcile("c9"))
    assert cluster_client.sismember("clusters:all", "c9")


def test_deletions_reach_every_node(
    cluster_store: Callable[..., RedisStore], cluster_client: redis.RedisCluster
) -> None:
    clustered = cluster_store()
    clustered.store(fleet())
    clustered.store([ClusterDeletion("c1"), MetricSourceDeletion("default", "vms")])
    keys = {key.decode() for key in cluster_client.scan_iter(count=1000)}
    assert not [key for key in keys if key.startswith("cluster:c1:")]
    assert "cluster:c2:spec" in keys and "registry:r1:spec" in keys
    assert cluster_client.smembers("clusters:all") == {b"c2"}
    assert not cluster_client.exists("metricsource:default:vms")


def test_a_node_restart_during_writes_loses_nothing_once_it_is_back(
    cluster_store: Callable[..., RedisStore],
    cluster_client: redis.RedisCluster,
    store: RedisStore,
    raw: redis.Redis,
    redis_cluster: RedisClusterProcesses,
) -> None:
    clustered = cluster_store(retry_attempts=1)
    pieces = fleet()
    clustered.store(pieces)
    failures: list[BaseException] = []
    written = 0
    stop = threading.Event()

    def write() -> None:
        nonlocal written
        while not stop.is_set():
            try:
                clustered.store(pieces)
                written += 1
            except BaseException as exc:  # collected, checked below
                failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        eventually(lambda: written + len(failures), "the writer's first store", STARTUP)
        redis_cluster.restart(1)  # no persistence: the node comes back empty, with its slots
        after_restart = written
        eventually(lambda: written > after_restart, "a store to succeed after the restart", 30)
    finally:
        stop.set()
        writer.join(60)
    assert not writer.is_alive()
    # While the node was down, a store failed as a store error (never anything else).
    assert all(isinstance(exc, RedisStoreError) for exc in failures), failures[:3]

    clustered.store(pieces)  # the next reconcile writes everything again
    store.store(pieces)
    got, want = contents(cluster_client), contents(raw)
    assert set(got) == set(want)
    for key, (kind, value) in want.items():
        if key.startswith(b"events:"):  # repeated stores pushed more events: compare the newest
            assert got[key][1][0] == value[0]  # type: ignore[index]
        else:
            assert got[key] == (kind, value), key
