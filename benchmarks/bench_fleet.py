"""A fleet of N ClusterConnections on emulated clusters: is every reconcile done on schedule?

Four managed clusters (50 nodes, 1,000 pods, 40 namespaces each by default) and the hub are
Kubernetes API emulators in their own processes; Redis is a real redis-server. N
ClusterConnections on the hub point at the four clusters in turn. For each N the real
controller (``clusterpulse run``, one process, or R processes with ``sharding = true``) runs
for one interval to warm up, then for a measured window; printed per run:

* reconciles completed in the window against those due (N per interval),
* controller CPU per reconcile (``/proc`` of the controller processes) against a bare
  fetch-and-decode of the same pages (the same GETs with urllib3, decoded with the same typed
  decoders, in this process, in the same run): the lower bound of a reconcile,
* the controllers' peak RSS, and the emulators' CPU separately (not blamed on the controller).

Target: each replica's CPU per reconcile unchanged by sharding; the fleet kept on schedule
grows with the replicas until the machine's cores run out.

    .venv/bin/python benchmarks/bench_fleet.py                 # N = 1, 100, 300, 1000; then 2 and 3 replicas
    .venv/bin/python benchmarks/bench_fleet.py --quick         # N = 1, 100, 300; 2 replicas at 300; 30 s window
    .venv/bin/python benchmarks/bench_fleet.py --sizes 500 --replicas 1,2 --window 60 --workers 10
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import redis
import urllib3
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_testing.servers import free_port, redis_process, require_binary

from clusterpulse_core.kube.client import KubeClient, make_api_client
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object
from clusterpulse_core.runtime.manager import collector_tuned

sys.path.insert(0, str(Path(__file__).parent))
import raw_redis
from bench_cluster_reconcile import node, pod
from bench_support import cpu_seconds, hub_objects, peak_rss_mib, start_emulator

NAMESPACE = "clusterpulse"
INTERVAL = 30
CLUSTERS = 4
#: A reconcile's CPU against its true lower bound (issue target).
TARGET_RATIO = 1.5
SLASH = "/"


def write_cluster(folder: Path, nodes: int, pods: int) -> None:
    folder.mkdir(parents=True)
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i}"}} for i in range(40)]
    (folder / "ns.json").write_text(json.dumps({"kind": "List", "items": namespaces}))
    (folder / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node(i) for i in range(nodes)]}))
    (folder / "pods.json").write_text(json.dumps({"kind": "List", "items": [pod(i, nodes) for i in range(pods)]}))


def write_hub(folder: Path, urls: list[str], count: int) -> None:
    kind = CLUSTER_CONNECTION
    folder.mkdir(parents=True)
    items = hub_objects(NAMESPACE, "token")
    items += [
        {
            "apiVersion": kind.api_version,
            "kind": kind.kind,
            "metadata": {"name": f"c{i:04d}", "namespace": NAMESPACE},
            "spec": {"endpoint": urls[i % len(urls)], "credentialsRef": {"name": "token"}},
        }
        for i in range(count)
    ]
    (folder / "hub.json").write_text(json.dumps({"kind": "List", "items": items}))


def reconciles_done(port: int) -> float:
    """controller_runtime_reconcile_total of ClusterConnection, every result, from /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    pattern = r'^controller_runtime_reconcile_total\{controller="clusterconnection",result="[a-z_]+"\} ([0-9.e+]+)$'
    return sum(float(value) for value in re.findall(pattern, text, re.M))


# --------------------------------------------------------------------------- the true lower bound


@dataclasses.dataclass
class Recording:
    """What one steady-state reconcile of one cluster did, recorded in this process."""

    #: (URL, decoder) of every GET, in order (the hub's and the managed cluster's).
    gets: list[tuple[str, Any]]
    #: The other HTTP calls (the status patch after every sync): method, URL, body, content type.
    other_calls: list[tuple[str, str, bytes, str]]
    #: Every write command Redis received, as Redis logged it (MONITOR): name first, raw bytes.
    writes: list[tuple[bytes, ...]]
    #: Whether the writes came inside MULTI/EXEC.
    transaction: bool
    #: CPU seconds of each real reconcile (``reconcile_object``, in this process, not instrumented).
    real: list[float] = dataclasses.field(default_factory=list)
    #: CPU seconds of each bare reconcile, alternated with the real ones: calls + decoding, write.
    fetch: list[float] = dataclasses.field(default_factory=list)
    write: list[float] = dataclasses.field(default_factory=list)

    def ratios(self) -> list[float]:
        """Each real reconcile's CPU over the bare one that followed it."""
        return [r / (f + w) for r, f, w in zip(self.real, self.fetch, self.write, strict=True)]


def record_reconcile(folder: Path, hub_url: str, redis_port: int, rounds: int) -> Recording:
    """Run the real reconcile of ClusterConnection ``c0000`` on the hub at ``hub_url`` in this
    process: a first pass, then one recorded (its HTTP calls and Redis writes), then ``rounds``
    times alternated with the bare reconcile made of the recording (:func:`bare_once`)."""
    config_file = folder / "calibration.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = ["redis", "cluster"]\nnamespace = "{NAMESPACE}"\nlog_level = "warn"\n'
        f'[plugins.redis]\nurl = "redis://127.0.0.1:{redis_port}/0"\n'
    )
    config, host = load(str(config_file))
    hub = KubeClient(make_api_client(hub_url), timeout=60)
    runtime = build_runtime(config, host, hub=hub)
    path = CLUSTER_CONNECTION.api_path(NAMESPACE, "c0000")
    gets: list[tuple[str, Any]] = []
    others: list[tuple[str, str, bytes, str]] = []
    decoders: dict[str, Any] = {}
    real_raw, real_list_decoded = KubeClient.raw, KubeClient.list_decoded

    def raw(client: KubeClient, method: str, path: str, query: Any = None, *args: Any, **kwargs: Any) -> Any:
        query_string = urllib.parse.urlencode([(k, _query(v)) for k, v in (query or {}).items() if v is not None])
        url = client.host + path + (f"?{query_string}" if query_string else "")
        if method == "GET":
            gets.append((url, decoders.get(path, generic_decoder)))
        else:
            body = args[0] if args else kwargs.get("body")
            content_type = args[1] if len(args) > 1 else kwargs.get("content_type", "application/json")
            others.append((method, url, b"" if body is None else msgspec.json.encode(body), content_type))
        return real_raw(client, method, path, query, *args, **kwargs)

    def list_decoded(client: KubeClient, path: str, decoder: Any, *args: Any, **kwargs: Any) -> Any:
        decoders[path] = getattr(decoder, "__self__", generic_decoder)  # the bound Decoder.decode's decoder
        return real_list_decoded(client, path, decoder, *args, **kwargs)

    writes: list[tuple[bytes, ...]] = []
    for _ in range(2):  # the first pass (Events, status), then the steady-state one, recorded
        gets.clear()
        others.clear()
        obj = hub.get(path)
        monitor = raw_redis.RedisMonitor(redis_port)
        KubeClient.raw, KubeClient.list_decoded = raw, list_decoded  # type: ignore[method-assign]  # recording
        try:
            outcome = reconcile_object(runtime, "cluster", CLUSTER_CONNECTION, obj)
        finally:
            KubeClient.raw, KubeClient.list_decoded = real_raw, real_list_decoded  # type: ignore[method-assign]
            writes = monitor.stop()
        if not outcome.ok:
            raise SystemExit(f"calibration reconcile failed: {outcome.detail}")
    recording = Recording(
        gets=list(gets),
        other_calls=list(others),
        writes=raw_redis.writes_only(writes, redis_port),
        transaction=raw_redis.in_transaction(writes),
    )
    # Then the real reconcile (not instrumented) and the bare one alternated, so load hits both
    # alike, both with the garbage collector tuned as the controller's Manager.run tunes it.
    pool = urllib3.PoolManager()
    client = redis.Redis(port=redis_port)
    with collector_tuned():
        for _ in range(rounds):
            obj = hub.get(path)
            start = time.process_time()
            outcome = reconcile_object(runtime, "cluster", CLUSTER_CONNECTION, obj)
            recording.real.append(time.process_time() - start)
            if not outcome.ok:
                raise SystemExit(f"calibration reconcile failed: {outcome.detail}")
            fetch, write = bare_once(recording, pool, client)
            recording.fetch.append(fetch)
            recording.write.append(write)
    client.close()
    runtime.store.close()
    runtime.pool.close()
    return recording


def _query(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _SkippedItem(msgspec.Struct):
    pass


class _CountMeta(msgspec.Struct, rename="camel"):
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class _CountPage(msgspec.Struct):
    """A ``limit=1`` count page, its items skipped (as ``KubeClient.count`` decodes it)."""

    items: list[_SkippedItem] | None = None
    metadata: _CountMeta = msgspec.field(default_factory=_CountMeta)


generic_decoder = msgspec.json.Decoder()
count_decoder = msgspec.json.Decoder(_CountPage)


def bare_once(recording: Recording, pool: urllib3.PoolManager, client: redis.Redis) -> tuple[float, float]:
    """CPU seconds of one bare reconcile: (HTTP calls + decoding, raw pipelined write).

    The GETs are the recorded URLs with urllib3 (one pool, keep-alive), each decoded with the
    decoder the real reconcile used (typed partial decoders for nodes, pods and namespaces; the
    count pages with items skipped; the rest generic), then the recorded status PATCH with its
    body. The writes are the recorded commands, same keys and bytes, through one redis-py
    pipeline (MULTI/EXEC when the real one used it).
    """
    headers = {"Authorization": "Bearer bench"}
    start = time.process_time()
    for url, decoder in recording.gets:
        data = pool.request("GET", url, headers=headers).data
        (count_decoder if "limit=1" in url and decoder is generic_decoder else decoder).decode(data)
    for method, url, body, content_type in recording.other_calls:
        generic_decoder.decode(
            pool.request(method, url, body=body, headers={**headers, "Content-Type": content_type}).data
        )
    middle = time.process_time()
    raw_redis.replay(client, recording.writes, recording.transaction)
    return middle - start, time.process_time() - middle


def run_fleet(
    hub_kubeconfig: Path,
    redis_port: int,
    replicas: int,
    workers: int,
    window: float,
    due_per_second: float,
    folder: Path,
    warmup: float,
    pin: str = "",
    profile: Path | None = None,
) -> dict[str, float]:
    """Run ``replicas`` controllers on the hub; measure the window after ``warmup`` seconds.

    ``pin``: the CPU list the controllers are pinned to (``taskset -c``); ``profile``: a py-spy
    speedscope profile of the first controller over the window is written there.
    """
    processes = []
    ports = []
    for index in range(replicas):
        port = free_port()
        ports.append(port)
        config = folder / f"replica-{index}.toml"
        config.write_text(
            f'[clusterpulse]\nplugins = ["redis", "cluster"]\nnamespace = "{NAMESPACE}"\n'
            f'kubeconfig = "{hub_kubeconfig}"\nmetrics_bind_address = "127.0.0.1:{port}"\n'
            f'health_probe_bind_address = "0"\nlog_level = "warn"\nsharding = {str(replicas > 1).lower()}\n'
            f"workers = {{ClusterConnection = {workers}}}\n"
            f'[plugins.redis]\nurl = "redis://127.0.0.1:{redis_port}/0"\n'
        )
        log = (folder / f"replica-{index}.log").open("w")
        command = [str(Path(sys.executable).with_name("clusterpulse")), "--config", str(config), "run"]
        processes.append(
            subprocess.Popen(["taskset", "-c", pin, *command] if pin else command, stdout=log, stderr=subprocess.STDOUT)
        )
    try:
        time.sleep(warmup)  # start-up, the initial burst, the ring settling
        for process in processes:
            if process.poll() is not None:
                raise SystemExit(f"a controller exited: see {folder}")
        done0 = [reconciles_done(port) for port in ports]
        cpu0 = [cpu_seconds(p.pid) for p in processes]
        spy = None
        if profile is not None:
            spy = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("py-spy")),
                    "record",
                    "--pid",
                    str(processes[0].pid),
                    "--duration",
                    str(int(window)),
                    "--rate",
                    "100",
                    "--nonblocking",
                    "--gil",  # only the thread holding the GIL: where the interpreter's CPU goes
                    "--threads",
                    "--format",
                    "speedscope",
                    "--output",
                    str(profile),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        time.sleep(window)
        done = [reconciles_done(port) - before for port, before in zip(ports, done0, strict=True)]
        cpu = [cpu_seconds(p.pid) - before for p, before in zip(processes, cpu0, strict=True)]
        rss = [peak_rss_mib(p.pid) for p in processes]
        if spy is not None:
            try:
                spy.wait(60)
            except subprocess.TimeoutExpired:
                spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled on SIGINT
                spy.wait(60)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
    return {
        "done": sum(done),
        "due": due_per_second * window,
        "cpu": sum(cpu),
        "cores": sum(cpu) / window,
        "per_reconcile_ms": 1000 * sum(cpu) / max(sum(done), 1),
        "rss": max(rss),
        "per_replica_ms": max(1000 * c / max(d, 1) for c, d in zip(cpu, done, strict=True)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,100,300,1000", help="fleet sizes N, comma-separated")
    parser.add_argument("--replicas", default="2,3", help="sharded replica counts run at the largest N")
    parser.add_argument("--window", type=float, default=60.0, help="measured seconds per run (after warm-up)")
    parser.add_argument(
        "--warmup",
        type=float,
        default=INTERVAL + 5,
        help="seconds before the window; past ~300 clusters the first pass (every object's "
        "first reconcile, heavier) outlasts the default, so the window measures it",
    )
    parser.add_argument("--workers", type=int, default=0, help="ClusterConnection workers (0: the default)")
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="N = 1, 100, 300; 2 replicas; 30 s windows")
    parser.add_argument("--pin-cpu", default="", help="pin the controllers to these CPUs (taskset -c), e.g. 1")
    parser.add_argument("--clusters", type=int, default=CLUSTERS, help="emulated managed clusters (processes)")
    parser.add_argument("--rounds", type=int, default=20, help="real/bare reconcile pairs for the bound")
    parser.add_argument("--profile", default="", help="folder for a py-spy speedscope profile of each run")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    sharded = [int(r) for r in args.replicas.split(",") if r]
    window = args.window
    if args.quick:
        sizes, sharded, window = [1, 100, 300], [2], 30.0
    workers = args.workers or CLUSTER_CONNECTION.workers
    window = INTERVAL * max(1, round(window / INTERVAL))  # whole intervals: each object is due once per interval
    warmup = args.warmup

    redis_server = redis_process(require_binary("redis-server", "redis-server"))
    redis_server.start()
    emulators: list[subprocess.Popen[str]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            urls = []
            for index in range(args.clusters):
                write_cluster(root / f"cluster-{index}", args.nodes, args.pods)
                process, url = start_emulator(root / f"cluster-{index}")
                emulators.append(process)
                urls.append(url)
            write_hub(root / "calibration-hub", urls[:1], 1)
            calibration_hub, calibration_url = start_emulator(root / "calibration-hub")
            try:
                recording = record_reconcile(root, calibration_url, redis_server.port, args.rounds)
            finally:
                calibration_hub.terminate()
                calibration_hub.wait(30)
            fetch, write, real = min(recording.fetch), min(recording.write), min(recording.real)
            bound = fetch + write
            ratios = sorted(recording.ratios())
            written = sum(len(a) for args_ in recording.writes for a in args_)
            print(
                f"fleet benchmark: {args.clusters} emulated clusters of {args.nodes} nodes / {args.pods} pods, "
                f"{INTERVAL} s interval, {window:.0f} s measured per run, {workers} workers per replica"
                + (f", controllers pinned to CPU {args.pin_cpu}" if args.pin_cpu else "")
                + f"; load average {os.getloadavg()[0]:.1f} at start"
            )
            print(
                f"true lower bound of one reconcile (this process, best of {args.rounds}): "
                f"{len(recording.gets)} GETs fetched + decoded and {len(recording.other_calls)} other calls "
                f"({', '.join(f'{m} {url.rsplit(SLASH, 1)[-1]}' for m, url, _, _ in recording.other_calls)}) "
                f"{fetch * 1000:.1f} ms, "
                f"{len(recording.writes)} Redis writes ({written / 1024:.0f} KiB) in one redis-py pipeline "
                f"{write * 1000:.1f} ms = {bound * 1000:.1f} ms CPU"
            )
            print(
                f"the real reconcile of the same cluster, alternated with it (reconcile_object, best of "
                f"{args.rounds}): {real * 1000:.1f} ms CPU = {real / bound:.2f}x the bound; median of the "
                f"{len(ratios)} pairwise ratios {ratios[len(ratios) // 2]:.2f}x "
                f"(target <= {TARGET_RATIO}x: {'met' if real / bound <= TARGET_RATIO else 'NOT met'}); medians: "
                f"real {statistics.median(recording.real) * 1000:.1f} ms, bound "
                f"{statistics.median(f + w for f, w in zip(recording.fetch, recording.write, strict=True)) * 1000:.1f}"
                " ms (a fleet's CPU per reconcile is a mean: compare it with these under load)"
            )
            print(
                "per N, each figure next to its limit: done/due (all due done); controller cores (at most one "
                "per replica); ms CPU per reconcile (at most the interval's ms x replicas / N, or the cores "
                f"cannot keep N); that over the bound (<= {TARGET_RATIO}x); peak RSS per cluster (flat: no "
                "more than at the smallest N)"
            )
            runs = [(n, 1) for n in sizes] + [(max(sizes), r) for r in sharded]
            first_per_cluster = 0.0
            for count, replicas in runs:
                hub_dir = root / f"hub-{count}-{replicas}"
                write_hub(hub_dir, urls, count)
                kubeconfig = hub_dir / "kubeconfig"
                hub, _url = start_emulator(hub_dir, kubeconfig)
                subprocess.run(
                    ["redis-cli", "-p", str(redis_server.port), "FLUSHALL"], check=False, capture_output=True
                )
                emu0 = sum(cpu_seconds(p.pid) for p in [*emulators, hub])
                profile = Path(args.profile) / f"fleet-{count}-{replicas}.speedscope.json" if args.profile else None
                try:
                    result = run_fleet(
                        kubeconfig,
                        redis_server.port,
                        replicas,
                        workers,
                        window,
                        count / INTERVAL,
                        hub_dir,
                        warmup,
                        args.pin_cpu,
                        profile,
                    )
                    emu = (sum(cpu_seconds(p.pid) for p in [*emulators, hub]) - emu0) / (window + warmup)
                finally:
                    hub.terminate()
                    hub.wait(30)
                per_cluster = result["rss"] * 1024 / count
                first_per_cluster = first_per_cluster or per_cluster
                limit_ms = INTERVAL * 1000 * replicas / count
                ratio = result["per_reconcile_ms"] / (bound * 1000)
                print(
                    f"N = {count}, {replicas} replica(s): done {result['done']:.0f} / due {result['due']:.0f}; "
                    f"controller cores {result['cores']:.2f} (limit {replicas:.2f}); "
                    f"CPU per reconcile {result['per_reconcile_ms']:.1f} ms (limit {limit_ms:.1f} ms to keep N; "
                    f"slowest replica {result['per_replica_ms']:.1f} ms); true bound {bound * 1000:.1f} ms, "
                    f"ratio {ratio:.2f}x (limit {TARGET_RATIO}x); peak RSS {result['rss']:.0f} MiB = "
                    f"{per_cluster:.0f} KiB per cluster (limit {first_per_cluster:.0f}, the smallest N's); "
                    f"emulators {emu:.2f} cores; "
                    + ", ".join(
                        f"{name} {'met' if ok else 'NOT met'}"
                        for name, ok in (
                            ("schedule", result["done"] >= result["due"] * 0.98),
                            ("cores", result["cores"] <= replicas),
                            ("CPU", result["per_reconcile_ms"] <= limit_ms),
                            ("ratio", ratio <= TARGET_RATIO),
                            ("memory", per_cluster <= first_per_cluster * 1.05),
                        )
                    ),
                    flush=True,
                )
    finally:
        for process in emulators:
            process.terminate()
        for process in emulators:
            process.wait(30)
        redis_server.cleanup()


if __name__ == "__main__":
    main()
