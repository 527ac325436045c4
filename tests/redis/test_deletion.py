"""Deletion of a cluster, a registry and a MetricSource removes exactly what docs/compatibility.md#deletion says."""

from __future__ import annotations

import redis
from clusterpulse_model.pieces import (
    ClusterDeletion,
    EventPiece,
    MetricSourceClusterDeletion,
    MetricSourceDeletion,
    RegistryDeletion,
)
from clusterpulse_redis import RedisStore
from redis_readback import snapshot
from redis_seed import cluster_reconcile, custom_data, metricsource, registry_reconcile


def test_cluster_deletion_removes_only_that_clusters_keys(store: RedisStore, raw: redis.Redis) -> None:
    for name in ("c1", "c10", "c2"):
        store.store(cluster_reconcile(name))
    store.store([metricsource("default", "vms", "virtualmachines")])
    assert raw.exists("cluster:c1:node:c1-n0:metrics", "cluster:c1:custom:default/vms:resources") == 2
    untouched = snapshot(raw, exclude_prefixes=("cluster:c1:", "clusters:all"))

    store.store([ClusterDeletion("c1")])

    assert list(raw.scan_iter(match="cluster:c1:*")) == []
    assert raw.smembers("clusters:all") == {b"c10", b"c2"}
    assert raw.exists("events:c1") == 1  # #deletion: not touched
    assert snapshot(raw, exclude_prefixes=("cluster:c1:", "clusters:all")) == untouched


def test_registry_deletion_removes_only_that_registrys_keys(store: RedisStore, raw: redis.Redis) -> None:
    for name in ("r1", "r10"):
        store.store(registry_reconcile(name))
    store.store(cluster_reconcile("r1"))  # a cluster of the same name shares only events:r1
    assert (
        raw.exists(
            "registry:r1:spec",
            "registry:r1:status",
            "registry:r1:meta",
            "registry:r1:metrics",
            "registry:r1:metrics:latest",
        )
        == 5
    )
    untouched = snapshot(raw, exclude_prefixes=("registry:r1:", "registries:all"))

    store.store([RegistryDeletion("r1")])

    assert list(raw.scan_iter(match="registry:r1:*")) == []
    assert raw.smembers("registries:all") == {b"r10"}
    assert snapshot(raw, exclude_prefixes=("registry:r1:", "registries:all")) == untouched


def test_metricsource_deletion_removes_definition_indexes_and_cluster_data(store: RedisStore, raw: redis.Redis) -> None:
    store.store(
        [
            metricsource("default", "vms", "virtualmachines"),
            metricsource("default", "vms2", "virtualmachines2"),
            metricsource("other", "vms", "vmsother"),
            *custom_data("c1", "default/vms"),
            *custom_data("c2", "default/vms"),
            *custom_data("c1", "default/vms2"),
            *custom_data("c1", "other/vms"),
        ]
    )
    store.store(cluster_reconcile("c3"))  # cluster:c3:custom:default/vms:* too
    deleted = {k for k in raw.scan_iter() if b"custom:default/vms:" in k} | {
        b"metricsource:default:vms",
        b"metricsource:default:vms:meta",
        b"metricsources:by:resourcetype:virtualmachines",
    }
    assert len(deleted) == 12  # 3 clusters x (resources, meta, aggregations) + definition, meta, type set
    untouched = {k: v for k, v in snapshot(raw).items() if k not in deleted and not k.startswith(b"metricsources:")}

    store.store([MetricSourceDeletion("default", "vms")])

    assert not any(raw.exists(k) for k in deleted)
    assert raw.smembers("metricsources:all") == {b"default/vms2", b"other/vms"}
    assert raw.smembers("metricsources:enabled") == {b"default/vms2", b"other/vms"}
    assert raw.smembers("metricsources:by:resourcetype:virtualmachines2") == {b"default/vms2"}
    after = {k: v for k, v in snapshot(raw).items() if not k.startswith(b"metricsources:")}
    assert after == untouched


def test_metricsource_cluster_data_deletion_is_per_cluster(store: RedisStore, raw: redis.Redis) -> None:
    store.store([*custom_data("c1", "default/vms"), *custom_data("c2", "default/vms")])
    before = snapshot(raw, exclude_prefixes=("cluster:c1:",))

    store.store([MetricSourceClusterDeletion("c1", "default/vms")])

    assert list(raw.scan_iter(match="cluster:c1:*")) == []
    assert snapshot(raw) == before


def test_deletion_then_event_in_one_call_keeps_order(store: RedisStore, raw: redis.Redis) -> None:
    store.store(cluster_reconcile("c1"))
    store.store([ClusterDeletion("c1"), EventPiece("cluster.deleted", "c1")])

    assert list(raw.scan_iter(match="cluster:c1:*")) == []
    newest = raw.lindex("events:c1", 0)
    assert newest is not None and b'"cluster.deleted"' in newest and b'"data":null' in newest
