"""The ingester under 1,000 concurrent agent streams, against its true lower bound in the same run.

Clients run in another process (``--client`` mode of this script): ``--streams`` Connect streams
over ``--channels`` connections, each registering once and then sending a ``--nodes``-node batch
as soon as the previous one is acked, for ``--seconds``. The same client run is made against

* a bare echo server: the generated servicer answering every batch with ``Ack(success=True)``,
  no parsing beyond protobuf, no auth, no storage (the ceiling of grpc.aio itself);
* echo + raw write, the true lower bound: the same echo server, which also writes, per batch,
  the keys one batch produces (the commands the real Redis store of one converted batch sent,
  recorded by Redis's MONITOR) through one plain redis-py pipeline, same keys and bytes;
* the real ingester plugin: C4 token checks against a hub emulator holding 1,000
  ClusterConnections and Secrets, conversion to pieces, the Redis store (a real redis-server)
  and the acks.

Prints sustained batches/s, p50/p99 ack latency, streams held, the server process's RSS and
CPU (its share of a core, the clients' share, and the server's CPU milliseconds per batch: on a
machine shared with other work the share each process gets varies, the CPU per batch much
less). Targets: 1,000 streams held, the ingester's CPU per batch <= 1.5x echo + raw write's,
RSS < 1 GiB; and the agents one process serves at a 30 s interval (30 s / CPU per batch).
Last, measured on one thread of this process: parsing one batch, reading every node value out
of it (``upb`` builds a Python object per field read), and the whole conversion to pieces.

    .venv/bin/python benchmarks/bench_ingester.py [--streams 1000] [--seconds 20] [--nodes 50]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import operator
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import redis
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_ingester.convert import NODE_FIELDS, pieces_from_batch
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc
from clusterpulse_model import collector_token
from clusterpulse_testing.kube_api import KubeAPI
from clusterpulse_testing.servers import free_port, redis_process, require_binary

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, start_plugins, stop_plugins

sys.path.insert(0, str(Path(__file__).parent))
import raw_redis

NAMESPACE = "clusterpulse"
#: The ingester's CPU per batch against echo + the raw write of the batch's keys (issue target).
TARGET_RATIO = 1.5
INTERVAL = 30
TARGET_RSS = 1024**3
CONNECT = "/clusterpulse.collector.v1.CollectorService/Connect"


def cluster(index: int) -> str:
    """The name of stream ``index``'s cluster."""
    return f"agent-{index:04d}"


def make_batch(name: str, nodes: int) -> pb.MetricsBatch:
    """A batch like a 50-node cluster's (nodes, totals, info, namespaces)."""
    batch = pb.MetricsBatch(cluster_name=name)
    batch.cluster_metrics.CopyFrom(
        pb.ClusterMetrics(
            nodes=nodes,
            nodes_ready=nodes,
            namespaces=30,
            namespace_list=[f"team-{i}" for i in range(30)],
            pods=nodes * 20,
            pods_running=nodes * 18,
            cpu_capacity=nodes * 8.0,
            memory_capacity=nodes * 32 * 2**30,
            deployments=nodes * 4,
        )
    )
    for i in range(nodes):
        batch.node_metrics.append(
            pb.NodeMetrics(
                name=f"node-{i:03d}",
                status="Ready",
                roles=["worker"],
                cpu_capacity=8.0,
                memory_capacity=32 * 2**30,
                storage_capacity=120 * 2**30,
                pods_capacity=110,
                cpu_allocatable=7.5,
                memory_allocatable=31 * 2**30,
                storage_allocatable=110 * 2**30,
                pods_allocatable=110,
                cpu_requested=3.2,
                memory_requested=12 * 2**30,
                cpu_usage_percent=42.6,
                memory_usage_percent=38.7,
                pods_running=18,
                pods_pending=1,
                pods_total=20,
                kernel_version="5.14.0-284",
                os_image="RHCOS 4.14",
                container_runtime="cri-o://1.27.1",
                kubelet_version="v1.27.16",
                architecture="amd64",
                internal_ip=f"10.0.0.{i}",
                hostname=f"node-{i:03d}",
                labels={
                    "kubernetes.io/hostname": f"node-{i:03d}",
                    "node-role.kubernetes.io/worker": "",
                    "topology.kubernetes.io/zone": f"zone-{i % 3}",
                },
            )
        )
    batch.cluster_info.CopyFrom(pb.ClusterInfo(version="v1.27.16", platform="linux/amd64"))
    return batch


# --------------------------------------------------------------------------- the CPU floor


def cpu_per_call(work: Callable[[], object], seconds: float = 1.0) -> float:
    """CPU seconds one call of ``work`` takes on this thread (repeated for about ``seconds``)."""
    calls, started = 0, time.thread_time()
    while (used := time.thread_time() - started) < seconds:
        for _ in range(20):
            work()
        calls += 20
    return used / calls


def conversion_floor(nodes: int) -> dict[str, float]:
    """CPU per batch of: parsing it, reading every node value out of it, and converting it to pieces."""
    wire = pb.ConnectRequest(metrics=make_batch(cluster(0), nodes)).SerializeToString()
    parsed = pb.ConnectRequest.FromString(wire).metrics
    values = operator.attrgetter("name", "status", *NODE_FIELDS, "internal_ip", "hostname")
    now = datetime.now(UTC)

    def read() -> None:
        for node in parsed.node_metrics:  # each read the cheapest way found (as convert.py reads them)
            labels = node.labels
            values(node), tuple(node.roles[:]), {key: labels[key] for key in labels}

    return {
        "parse": cpu_per_call(lambda: pb.ConnectRequest.FromString(wire)),
        "read": cpu_per_call(read),
        "convert": cpu_per_call(lambda: pieces_from_batch(parsed, cluster(0), now)),
    }


# --------------------------------------------------------------------------- servers


class EchoServicer(pb_grpc.CollectorServiceServicer):
    """The bare comparison: config at register, an ack per batch, nothing else (``write``: also
    run it per batch, before the ack)."""

    def __init__(self, write: Callable[[], object] | None = None) -> None:
        self.write = write

    async def Connect(self, request_iterator: Any, context: Any) -> None:
        """Answer like an ingester that does no work (but the raw write, when given)."""
        async for request in request_iterator:
            kind = request.WhichOneof("payload")
            if kind == "register":
                await context.write(pb.ConnectResponse(config=pb.ConfigUpdate()))
            elif kind == "metrics":
                if self.write is not None:
                    self.write()
                await context.write(pb.ConnectResponse(ack=pb.Ack(batch_id=request.metrics.batch_id, success=True)))


class EchoServer:
    """The echo servicer on its own event loop thread."""

    def __init__(self, port: int, write: Callable[[], object] | None = None) -> None:
        self.port = port
        self.write = write
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", 16 * 2**20)])
        pb_grpc.add_CollectorServiceServicer_to_server(EchoServicer(self.write), server)
        server.add_insecure_port(f"127.0.0.1:{self.port}")
        await server.start()
        self._ready.set()
        await self._stop.wait()
        await server.stop(0.5)

    def __enter__(self) -> EchoServer:
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def hub_with_clusters(streams: int) -> KubeAPI:
    """A hub emulator holding one ClusterConnection and token Secret per stream."""
    hub = KubeAPI().start()
    kind = CLUSTER_CONNECTION
    hub.add_crd(kind.group, kind.version, kind.kind, kind.plural)
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
    for i in range(streams):
        name = cluster(i)
        # The hub's credential stays on the hub; the agent presents the collector token the hub minted.
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"{name}-token", "namespace": NAMESPACE},
                "data": {"token": base64.b64encode(f"hub-credential-{name}".encode()).decode()},
            }
        )
        objects.append(collector_token.secret_object(NAMESPACE, name, {collector_token.TOKEN_KEY: f"token-{name}"}))
        objects.append(
            {
                "apiVersion": kind.api_version,
                "kind": kind.kind,
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {
                    "endpoint": "https://unreachable",
                    "credentialsRef": {"name": f"{name}-token"},
                    "collectionMode": "push",
                    "ingesterAddress": "bench:9443",
                },
            }
        )
    hub.seed(objects)
    return hub


def rss_bytes() -> int:
    """Resident set size of this process now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_clients(port: int, args: argparse.Namespace) -> dict[str, Any]:
    """This script in ``--client`` mode against ``port``; returns its JSON result.

    Adds ``server_cpu``: this process's CPU seconds per wall second during the clients'
    closed-loop window (sampled; CLOCK_MONOTONIC is shared with the client process), to show
    which side of the run was the limit.
    """
    samples: list[tuple[float, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            samples.append((time.monotonic(), time.process_time()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    result = subprocess.run(
        [
            sys.executable,
            __file__,
            "--client",
            "--port",
            str(port),
            "--streams",
            str(args.streams),
            "--seconds",
            str(args.seconds),
            "--nodes",
            str(args.nodes),
            "--channels",
            str(args.channels),
        ],
        capture_output=True,
        text=True,
        timeout=args.seconds * 10 + 300,
    )
    if result.returncode != 0:
        raise SystemExit(f"client failed: {result.stderr[-2000:]}")
    done.set()
    sampler.join()
    out = dict(json.loads(result.stdout.strip().splitlines()[-1]))
    inside = [s for s in samples if out["window"][0] <= s[0] <= out["window"][1]]
    out["server_cpu"] = (
        (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0]) if len(inside) > 1 else float("nan")
    )
    return out


# --------------------------------------------------------------------------- clients


async def client_main(args: argparse.Namespace) -> dict[str, Any]:
    """Open every stream, register, then send closed-loop for ``seconds``; latencies of every ack."""
    channels = [
        grpc.aio.insecure_channel(f"127.0.0.1:{args.port}", options=[("grpc.max_send_message_length", 16 * 2**20)])
        for _ in range(args.channels)
    ]
    registered = 0
    failed: list[str] = []
    latencies: list[float] = []
    start = asyncio.Event()
    all_registered = asyncio.Event()
    deadline = [0.0]

    async def stream(index: int) -> None:
        nonlocal registered
        name = cluster(index)
        token = f"token-{name}"
        # Requests go out as bytes the client serialized itself: the batch once, and per send a
        # tiny ConnectRequest holding only the new batch_id, appended (protobuf merges repeated
        # occurrences of a message field, so the server parses exactly the batch with that id).
        # Copying and re-serializing the batch per send made the one client process, not the
        # echo server, the limit of the echo run.
        connect = channels[index % len(channels)].stream_stream(
            CONNECT, request_serializer=bytes, response_deserializer=pb.ConnectResponse.FromString
        )
        call = connect(metadata=(("authorization", f"Bearer {token}"),))
        wire = pb.ConnectRequest(metrics=make_batch(name, args.nodes)).SerializeToString()
        try:
            await call.write(
                pb.ConnectRequest(
                    register=pb.RegisterRequest(cluster_name=name, token=token, version="bench")
                ).SerializeToString()
            )
            first = await call.read()
            if first is grpc.aio.EOF:
                raise RuntimeError("closed at register")
            registered += 1
            if registered == args.streams:
                all_registered.set()
            await start.wait()
            sequence = 0
            while time.monotonic() < deadline[0]:
                sequence += 1
                batch_id = pb.ConnectRequest(metrics=pb.MetricsBatch(batch_id=f"{index}-{sequence}"))
                sent = time.perf_counter()
                await call.write(wire + batch_id.SerializeToString())
                response = await call.read()
                if response is grpc.aio.EOF or not response.ack.success:
                    raise RuntimeError(f"bad ack: {response}")
                latencies.append(time.perf_counter() - sent)
            await call.done_writing()
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            all_registered.set() if registered + len(failed) >= args.streams else None

    tasks = [asyncio.ensure_future(stream(i)) for i in range(args.streams)]
    register_started = time.monotonic()
    await asyncio.wait_for(all_registered.wait(), timeout=300)
    register_seconds = time.monotonic() - register_started
    deadline[0] = time.monotonic() + args.seconds
    started, started_cpu = time.monotonic(), time.process_time()
    start.set()
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started
    cpu = time.process_time() - started_cpu
    window = (started, started + elapsed)
    for channel in channels:
        await channel.close()
    latencies.sort()

    def quantile(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")

    return {
        "acks": len(latencies),
        "seconds": elapsed,
        "rate": len(latencies) / elapsed,
        "p50": quantile(0.5),
        "p99": quantile(0.99),
        "held": args.streams - len(failed),
        "registered": registered,
        "register_seconds": register_seconds,
        "failed": failed[:3],
        "client_cpu": cpu / elapsed,
        "window": window,
    }


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(asyncio.run(client_main(args))))
        return

    size = make_batch(cluster(0), args.nodes).ByteSize()
    print(
        f"{args.streams} streams over {args.channels} connections, {args.nodes}-node batches of {size} bytes, "
        f"closed loop for {args.seconds:.0f} s; clients in another process; real redis-server; "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    floor = conversion_floor(args.nodes)
    base_rss = rss_bytes()
    redis_server = redis_process(require_binary("redis-server", "redis-server"))
    redis_server.start()
    hub = hub_with_clusters(args.streams)
    port = free_port()
    config_file = Path(f"/tmp/bench-ingester-{port}.toml")
    config_file.write_text(
        # The cluster plugin offers the ClusterConnections the ingester signs agents in against.
        f'[clusterpulse]\nplugins = ["ingester", "redis", "cluster"]\nnamespace = "{NAMESPACE}"\n'
        f'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\n'
        f'[plugins.ingester]\nbind_address = "127.0.0.1"\nport = {port}\n'
        # Every simulated agent connects from 127.0.0.1 at once: one peer address.
        f"max_streams_per_peer = {args.streams}\nmax_unregistered_streams = {args.streams}\n"
        # Plaintext like the echo servers it is compared with (the clients speak plaintext).
        "tls_enabled = false\n"
        f'[plugins.redis]\nurl = "redis://127.0.0.1:{redis_server.port}/0"\n'
    )
    writer = redis.Redis(port=redis_server.port)
    try:
        config, host = load(str(config_file), env={})
        runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
        # The keys one batch produces: the real store of one converted batch, recorded by Redis.
        batch = pb.ConnectRequest.FromString(
            pb.ConnectRequest(metrics=make_batch(cluster(0), args.nodes)).SerializeToString()
        ).metrics
        monitor = raw_redis.RedisMonitor(redis_server.port)
        runtime.store.put(*pieces_from_batch(batch, cluster(0), datetime.now(UTC)))
        commands = monitor.stop()
        writes = raw_redis.writes_only(commands, redis_server.port)
        transaction = raw_redis.in_transaction(commands)
        written = sum(len(a) for command in writes for a in command)
        port_echo = free_port()
        with EchoServer(port_echo):
            echo = run_clients(port_echo, args)
        echo_rss = rss_bytes()
        port_echo = free_port()
        with EchoServer(port_echo, lambda: raw_redis.replay(writer, writes, transaction)):
            bound = run_clients(port_echo, args)
        bound_rss = rss_bytes()
        start_plugins(runtime)
        try:
            ingester = run_clients(port, args)
            ingester_rss = rss_bytes()
        finally:
            stop_plugins(runtime)
    finally:
        writer.close()
        config_file.unlink(missing_ok=True)
        hub.stop()
        redis_server.cleanup()

    def per_batch(r: dict[str, Any]) -> float:
        return float(r["server_cpu"] / r["rate"]) if r["rate"] else float("nan")

    def row(label: str, r: dict[str, Any], rss: int) -> str:
        return (
            f"{label:<12} {r['held']:>5}/{args.streams} held  {r['rate']:>8.1f} batches/s  "
            f"p50 {r['p50'] * 1000:>7.1f} ms  p99 {r['p99'] * 1000:>7.1f} ms  "
            f"register all {r['register_seconds']:.1f} s  RSS {rss / 2**20:.0f} MiB  "
            f"CPU: server {r['server_cpu'] * 100:.0f} %, clients {r['client_cpu'] * 100:.0f} % of a core, "
            f"server {per_batch(r) * 1000:.2f} ms per batch"
        )

    print(
        f"the keys one batch produces: {len(writes)} Redis writes ({written / 1024:.0f} KiB), replayed per "
        f"batch by the echo+write server through one redis-py pipeline"
    )
    print(row("echo", echo, echo_rss))
    print(row("echo+write", bound, bound_rss))
    print(row("ingester", ingester, ingester_rss))
    ratio = per_batch(ingester) / per_batch(bound)
    print(
        f"ingester CPU per batch / echo+write (the true lower bound): {ratio:.2f}x "
        f"(target <= {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'}); / bare echo: "
        f"{per_batch(ingester) / per_batch(echo):.2f}x; throughput {ingester['rate'] / bound['rate'] * 100:.0f} % "
        f"of echo+write, {ingester['rate'] / echo['rate'] * 100:.0f} % of echo"
    )
    print(
        f"agents one process serves at a {INTERVAL} s interval: {INTERVAL / per_batch(ingester):.0f} per core "
        f"of server CPU ({INTERVAL} s / {per_batch(ingester) * 1000:.2f} ms per batch); measured rate x "
        f"{INTERVAL} s: {ingester['rate'] * INTERVAL:.0f}"
    )
    print(
        f"streams held: {ingester['held']} (target {args.streams}: "
        f"{'met' if ingester['held'] == args.streams else 'NOT met'})"
    )
    print(
        f"benchmark process RSS with the ingester: {ingester_rss / 2**20:.0f} MiB (before any server "
        f"{base_rss / 2**20:.0f} MiB; target < {TARGET_RSS / 2**30:.0f} GiB: "
        f"{'met' if ingester_rss < TARGET_RSS else 'NOT met'})"
    )
    print(
        f"one thread, per {args.nodes}-node batch: parse {floor['parse'] * 1000:.2f} ms, read every node value "
        f"{floor['read'] * 1000:.2f} ms, convert to pieces {floor['convert'] * 1000:.2f} ms"
    )
    for failure in ingester["failed"] + bound["failed"] + echo["failed"]:
        print(f"  failure: {failure}")


if __name__ == "__main__":
    main()
