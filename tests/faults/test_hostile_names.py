"""Hostile node names and annotations from a managed cluster: nothing lands on a wrong key.

A node named ``edge-lab-rpi-01:metrics`` would write ``cluster:<c>:node:edge-lab-rpi-01:metrics``,
the time series of node ``edge-lab-rpi-01``; ``*`` would turn a reader's key pattern into a
wildcard. Such names are skipped (never written; counted in the status's ``Truncated`` condition
and ``clusterpulse_collection_skipped``, and left out of every stored count), the node set follows
the current node list, and a huge annotation is truncated in what is stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from fault_support import HUB_NAMESPACE, TOKEN, add_cluster, make_hub, managed_objects, node, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins

HOSTILE = ("edge-lab-rpi-01:metrics", "bad*name", "UPPER", "x" * 300)


def test_invalid_node_names_are_skipped_and_the_node_set_is_pruned(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    big = "v" * (2 * 1024 * 1024)
    objects = managed_objects("edge-lab-rpi-01", "worker-2", *HOSTILE)
    objects.append(node("annotated", {"huge": big, "small": "kept"}))
    cluster = kube_api(objects=objects, require_token=TOKEN)
    add_cluster(hub, "edge", cluster.url)
    config, host = load(str(write_config(tmp_path / "config.toml", redis_url)), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    start_plugins(runtime)
    try:
        owner, kind = runtime.plugins.kinds["ClusterConnection"]

        def reconcile() -> None:
            obj = hub.get(kind.api_version, kind.plural, "edge", HUB_NAMESPACE)
            outcome = reconcile_object(runtime, owner, kind, obj)
            assert outcome.ok, outcome.detail

        reconcile()
        members = client.smembers("cluster:edge:nodes")
        skipped = runtime.metrics.get_sample_value(
            "clusterpulse_collection_skipped", {"cluster": "edge", "what": "nodes", "reason": "invalid name"}
        )
        status = hub.get(kind.api_version, kind.plural, "edge", HUB_NAMESPACE)["status"]
        metrics = json.loads(client.get("cluster:edge:metrics") or "{}")
        truncated = next(c for c in status["conditions"] if c["type"] == "Truncated")
        stored = json.loads(client.hget("cluster:edge:node:annotated", "current") or "{}")
        stored_annotation = stored["annotations"]["huge"]
        print(
            f"\nnode set {sorted(members)}; skipped names {skipped}; 2 MiB annotation stored as "
            f"{len(stored_annotation)} bytes"
        )
        assert members == {"edge-lab-rpi-01", "worker-2", "annotated"}
        assert skipped == len(HOSTILE)
        # Every count is of what was stored, and the status says what was not, and why.
        assert status["nodes"] == metrics["nodes"] == metrics["nodes_ready"] == 3
        assert truncated["reason"] == "InvalidNames"
        assert truncated["message"] == f"stored 3 of {3 + len(HOSTILE)} nodes ({len(HOSTILE)} skipped: invalid name)"
        assert client.type("cluster:edge:node:edge-lab-rpi-01:metrics") == "zset"  # the real node's series
        assert not client.keys("cluster:edge:node:bad*") and not client.keys("cluster:edge:node:UPPER*")
        assert stored["annotations"]["small"] == "kept"
        assert len(stored_annotation) < 10_000 and stored_annotation.endswith("[truncated]")

        cluster.delete("v1", "nodes", "worker-2")
        reconcile()
        assert client.smembers("cluster:edge:nodes") == {"edge-lab-rpi-01", "annotated"}
        assert not client.exists("cluster:edge:node:worker-2", "cluster:edge:node:worker-2:metrics")
        assert client.exists("cluster:edge:node:edge-lab-rpi-01")
    finally:
        stop_plugins(runtime)
        client.close()
