"""Count bounds at full scale: a 300,000-node cluster (pull) and a 100,000-node pushed batch.

Each case runs in a child process of its own (so its peak RSS is its own), against a real
redis-server flushed before it, and is measured twice: at the scale of the fault trial and at
exactly the count bound (``max_nodes`` / ``max_batch_nodes``, 5,000 by default). With the bounds,
the big case must cost what the bounded one costs: the figure is printed next to that limit
(peak RSS within 1.25 x + 32 MiB of the bounded run's, Redis memory within 1.1 x + 1 MiB and
no more keys). A pushed batch also costs its parsed message, which ``max_message_bytes`` bounds
(gRPC parses a message whole): the push limit adds what parsing that message alone took, measured
in the same child.

* pull: two reconciles of one ClusterConnection, by the cluster and redis plugins, of a cluster
  served by the API emulator (in its own process) with ``--nodes`` small nodes;
* push: the ingester's work for two batches of ``--batch-nodes`` small nodes: parsing the serialized
  message, :func:`~clusterpulse_ingester.convert.pieces_from_batch` with the ingester's default
  limits, and storing the pieces in Redis.

Before the bounds (the issue's fault trial): 300,000 nodes took the controller to 1.65 GB RSS and
Redis to 1.03 GB / 900,000 keys; a 100,000-node batch RSS 91 -> 479 MB, Redis +258 MB / 200,000 keys.

    .venv/bin/python benchmarks/bench_count_bounds.py [--nodes 300000] [--batch-nodes 100000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from bench_support import hub_objects, proc_status, start_emulator
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_testing.servers import redis_process, require_binary

NAMESPACE = "clusterpulse"
MIB = 1024 * 1024
BOUND = 5000


def small_node(index: int) -> dict[str, Any]:
    """A small Ready node (about 140 bytes of JSON, as in the fault trial)."""
    name = f"n-{index:06d}"
    return {
        "metadata": {"name": name},
        "status": {"capacity": {"cpu": "4", "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def write_cluster(folder: Path, nodes: int) -> None:
    """The emulator's objects: the hub part (CRD, namespace, Secret) and ``nodes`` nodes."""
    hub = hub_objects(NAMESPACE, "big-token")
    (folder / "hub.json").write_text(json.dumps({"kind": "List", "items": hub}))
    with (folder / "nodes.json").open("w") as out:
        out.write('{"kind": "List", "items": [')
        out.write(",".join(json.dumps({"apiVersion": "v1", "kind": "Node", **small_node(i)}) for i in range(nodes)))
        out.write("]}")


def peak_rss() -> int:
    """This process's peak RSS (``VmHWM``), bytes."""
    return proc_status("self", "VmHWM")


def pull_child(url: str, redis_url: str, folder: str) -> dict[str, Any]:
    """Two reconciles of cluster ``big``; peak RSS before and after."""
    from clusterpulse_core.kube.client import KubeClient, make_api_client
    from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, stop_plugins

    config_file = Path(folder) / "clusterpulse.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = ["redis", "cluster"]\nnamespace = "{NAMESPACE}"\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n'
    )
    config, host = load(str(config_file), env={})
    hub = KubeClient(make_api_client(url), timeout=120)
    runtime = build_runtime(config, host, hub=hub)
    runtime.pool.timeout = 120
    before = peak_rss()
    try:
        for _ in range(2):
            obj = hub.get(CLUSTER_CONNECTION.api_path(NAMESPACE, "big"))
            outcome = reconcile_object(runtime, "cluster", CLUSTER_CONNECTION, obj)
            if not outcome.ok:
                raise SystemExit(f"reconcile failed: {outcome.detail}")
    finally:
        stop_plugins(runtime)
    return {"before": before, "peak": peak_rss()}


def write_batch(path: Path, nodes: int) -> int:
    """A serialized batch of ``nodes`` small nodes (as the ingester receives it) in ``path``; its size."""
    from clusterpulse_ingester.proto import collector_pb2 as pb

    sent = pb.MetricsBatch(cluster_name="big")
    sent.cluster_metrics.CopyFrom(
        pb.ClusterMetrics(nodes=nodes, nodes_ready=nodes, namespaces=1, namespace_list=["default"])
    )
    sent.node_metrics.extend(
        pb.NodeMetrics(
            name=f"n-{i:06d}",
            status="Ready",
            cpu_capacity=4.0,
            pods_capacity=110,
            labels={"kubernetes.io/hostname": f"n-{i:06d}"},
        )
        for i in range(nodes)
    )
    return path.write_bytes(sent.SerializeToString())


def push_child(path: str, redis_url: str) -> dict[str, Any]:
    """Two batches read from ``path``, parsed, converted and stored as the ingester does; peak RSS."""
    from clusterpulse_ingester.convert import pieces_from_batch
    from clusterpulse_ingester.proto import collector_pb2 as pb
    from clusterpulse_redis.settings import RedisSettings
    from clusterpulse_redis.store import RedisStore

    store = RedisStore(RedisSettings(url=redis_url))
    before = peak_rss()
    # What parsing alone costs: bounded by max_message_bytes (gRPC parses the whole message), not by counts.
    parsed = pb.MetricsBatch.FromString(Path(path).read_bytes())
    parse_cost = peak_rss() - before
    del parsed
    for _ in range(2):
        batch = pb.MetricsBatch.FromString(Path(path).read_bytes())
        store.store(pieces_from_batch(batch, "big", datetime.now(UTC)))
        del batch
    return {"before": before, "peak": peak_rss(), "parse": parse_cost}


def child(*argv: str) -> dict[str, Any]:
    """This script in a child mode; its JSON result."""
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def redis_figures(client: redis.Redis) -> tuple[int, int]:
    """Redis ``used_memory`` and key count."""
    info = client.info("memory")
    return int(info["used_memory"]), int(client.dbsize())


def measure_pull(nodes: int, client: redis.Redis, redis_url: str) -> dict[str, Any]:
    """The pull case at ``nodes`` nodes."""
    client.flushall()
    empty, _ = redis_figures(client)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_cluster(folder, nodes)
        emulator, url = start_emulator(folder)
        try:
            from clusterpulse_core.kube.client import KubeClient, make_api_client

            hub = KubeClient(make_api_client(url), timeout=120)
            hub.request(
                "POST",
                CLUSTER_CONNECTION.api_path(NAMESPACE),
                body={
                    "apiVersion": CLUSTER_CONNECTION.api_version,
                    "kind": "ClusterConnection",
                    "metadata": {"name": "big", "namespace": NAMESPACE},
                    "spec": {"endpoint": url, "credentialsRef": {"name": "big-token"}},
                },
            )
            result = child("--pull-child", url, redis_url, tmp)
        finally:
            emulator.kill()
            emulator.wait()
    used, keys = redis_figures(client)
    return {**result, "redis": used - empty, "keys": keys}


def measure_push(nodes: int, client: redis.Redis, redis_url: str) -> dict[str, Any]:
    """The push case at ``nodes`` nodes."""
    client.flushall()
    empty, _ = redis_figures(client)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batch.bin"
        size = write_batch(path, nodes)
        result = child("--push-child", str(path), redis_url)
    used, keys = redis_figures(client)
    return {**result, "redis": used - empty, "keys": keys, "message_bytes": size}


def report(label: str, big: dict[str, Any], bounded: dict[str, Any]) -> bool:
    """Print one case next to its limits; whether it holds."""
    rss_limit = 1.25 * bounded["peak"] + 32 * MIB + big.get("parse", 0)
    redis_limit = 1.1 * bounded["redis"] + MIB
    ok = big["peak"] <= rss_limit and big["redis"] <= redis_limit and big["keys"] <= bounded["keys"]
    print(
        f"{label}: peak RSS {big['peak'] / MIB:.0f} MiB (limit {rss_limit / MIB:.0f}; at the bound "
        f"{bounded['peak'] / MIB:.0f}; {big['before'] / MIB:.0f} before the first"
        + (f"; parsing the message alone +{big['parse'] / MIB:.0f}" if "parse" in big else "")
        + "), "
        f"Redis +{big['redis'] / MIB:.1f} MiB (limit {redis_limit / MIB:.1f}) / "
        f"{big['keys']:,} keys (limit {bounded['keys']:,})  {'ok' if ok else 'OVER'}"
    )
    return ok


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--pull-child":
        print(json.dumps(pull_child(*sys.argv[2:5])))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--push-child":
        print(json.dumps(push_child(sys.argv[2], sys.argv[3])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300_000)
    parser.add_argument("--batch-nodes", type=int, default=100_000)
    args = parser.parse_args()
    server = redis_process(require_binary("redis-server", "redis-server"))
    server.start()
    redis_url = f"redis://127.0.0.1:{server.port}/0"
    client = redis.Redis.from_url(redis_url)
    try:
        pulled = measure_pull(args.nodes, client, redis_url)
        pulled_bound = measure_pull(BOUND, client, redis_url)
        pushed = measure_push(args.batch_nodes, client, redis_url)
        pushed_bound = measure_push(BOUND, client, redis_url)
    finally:
        client.close()
        server.stop()
    held = report(f"pull, {args.nodes:,} nodes (max_nodes {BOUND:,})", pulled, pulled_bound)
    held = (
        report(
            f"push, {args.batch_nodes:,}-node batch of {pushed['message_bytes'] / MIB:.1f} MiB "
            f"(max_batch_nodes {BOUND:,})",
            pushed,
            pushed_bound,
        )
        and held
    )
    if not held:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
