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
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import urllib3
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.wire_types import namespace_list_decoder, node_list_decoder, pod_list_decoder
from clusterpulse_testing.servers import free_port, redis_process, require_binary

from clusterpulse_core.kube.client import continue_of

sys.path.insert(0, str(Path(__file__).parent))
from bench_cluster_reconcile import node, pod

NAMESPACE = "clusterpulse"
INTERVAL = 30
CLUSTERS = 4
TICKS = os.sysconf("SC_CLK_TCK")
#: The GETs of one reconcile of a 50-node / 1,000-pod cluster (connection test, the node pass,
#: cluster info, the object counts); OLM and ClusterOperators answer 404 on the emulator and the
#: resource lists are left out.
PAGE_PATHS = ("/api/v1/namespaces?limit=1", "/api/v1/nodes?limit=500", "/api/v1/pods?limit=500",
              "/api/v1/namespaces?limit=500", "/version",
              *(f"{path}?limit=1" for path in ("/apis/apps/v1/deployments", "/api/v1/services",
                                               "/apis/apps/v1/statefulsets", "/apis/apps/v1/daemonsets",
                                               "/api/v1/persistentvolumeclaims")))


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (and its reaped children), seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / TICKS


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a process, MiB."""
    match = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) / 1024 if match else 0.0


def start_emulator(folder: Path | None, kubeconfig: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """An emulator in its own process; returns it and its URL."""
    code = ("import sys; from clusterpulse_testing.kube_api import serve; "
            "serve(sys.argv[1] or None, 0, sys.argv[2] or None)")
    process = subprocess.Popen([sys.executable, "-c", code, str(folder or ""), str(kubeconfig or "")],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        process.kill()
        raise RuntimeError("an emulator did not start")
    return process, url


def write_cluster(folder: Path, nodes: int, pods: int) -> None:
    folder.mkdir(parents=True)
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i}"}} for i in range(40)]
    (folder / "ns.json").write_text(json.dumps({"kind": "List", "items": namespaces}))
    (folder / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node(i) for i in range(nodes)]}))
    (folder / "pods.json").write_text(json.dumps({"kind": "List", "items": [pod(i, nodes) for i in range(pods)]}))


def write_hub(folder: Path, urls: list[str], count: int) -> None:
    kind = CLUSTER_CONNECTION
    folder.mkdir(parents=True)
    items: list[dict[str, Any]] = [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": kind.crd_name},
         "spec": {"group": kind.group, "scope": "Namespaced",
                  "names": {"kind": kind.kind, "plural": kind.plural, "singular": kind.singular,
                            "listKind": f"{kind.kind}List"},
                  "versions": [{"name": kind.version, "served": True, "storage": True,
                                "subresources": {"status": {}}, "schema": {"openAPIV3Schema": dict(kind.schema)}}]}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": NAMESPACE},
         "data": {"token": base64.b64encode(b"bench").decode(),
                  # the emulator subprocess serves plain HTTP: the explicit opt-out (docs/security.md)
                  "insecure-allow-http": base64.b64encode(b"true").decode()}},
    ]
    items += [{"apiVersion": kind.api_version, "kind": kind.kind,
               "metadata": {"name": f"c{i:04d}", "namespace": NAMESPACE},
               "spec": {"endpoint": urls[i % len(urls)], "credentialsRef": {"name": "token"}}}
              for i in range(count)]
    (folder / "hub.json").write_text(json.dumps({"kind": "List", "items": items}))


def reconciles_done(port: int) -> float:
    """controller_runtime_reconcile_total of ClusterConnection, every result, from /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    pattern = r'^controller_runtime_reconcile_total\{controller="clusterconnection",result="[a-z_]+"\} ([0-9.e+]+)$'
    return sum(float(value) for value in re.findall(pattern, text, re.M))


def bare_fetch_and_decode(url: str, rounds: int) -> float:
    """CPU seconds of one reconcile's GETs, fetched with urllib3 and decoded with the plugin's typed
    decoders (as the controller decodes them), with nothing else: no store, no status, no
    queue (best of ``rounds``)."""
    pool = urllib3.PoolManager()
    generic = msgspec.json.Decoder()
    decoders = {"/api/v1/nodes": node_list_decoder, "/api/v1/pods": pod_list_decoder,
                "/api/v1/namespaces?limit=500": namespace_list_decoder}
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for path in PAGE_PATHS:
            decoder = next((d for prefix, d in decoders.items() if path.startswith(prefix)), generic)
            token = ""
            while True:
                full = url + path + (f"&continue={token}" if token else "")
                page = decoder.decode(pool.request("GET", full, headers={"Authorization": "Bearer bench"}).data)
                token = continue_of(page) if path.endswith("limit=500") else ""  # counts stop at limit=1
                if not token:
                    break
        best = min(best, time.process_time() - start)
    return best


def run_fleet(hub_kubeconfig: Path, redis_port: int, replicas: int, workers: int, window: float,
              due_per_second: float, folder: Path, warmup: float) -> dict[str, float]:
    """Run ``replicas`` controllers on the hub; measure the window after ``warmup`` seconds."""
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
            f'workers = {{ClusterConnection = {workers}}}\n'
            f'[plugins.redis]\nurl = "redis://127.0.0.1:{redis_port}/0"\n')
        log = (folder / f"replica-{index}.log").open("w")
        processes.append(subprocess.Popen(
            [str(Path(sys.executable).with_name("clusterpulse")), "--config", str(config), "run"],
            stdout=log, stderr=subprocess.STDOUT))
    try:
        time.sleep(warmup)  # start-up, the initial burst, the ring settling
        for process in processes:
            if process.poll() is not None:
                raise SystemExit(f"a controller exited: see {folder}")
        done0 = [reconciles_done(port) for port in ports]
        cpu0 = [cpu_seconds(p.pid) for p in processes]
        time.sleep(window)
        done = [reconciles_done(port) - before for port, before in zip(ports, done0, strict=True)]
        cpu = [cpu_seconds(p.pid) - before for p, before in zip(processes, cpu0, strict=True)]
        rss = [peak_rss_mib(p.pid) for p in processes]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
    return {"done": sum(done), "due": due_per_second * window, "cpu": sum(cpu), "cores": sum(cpu) / window,
            "per_reconcile_ms": 1000 * sum(cpu) / max(sum(done), 1), "rss": max(rss),
            "per_replica_ms": max(1000 * c / max(d, 1) for c, d in zip(cpu, done, strict=True))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,100,300,1000", help="fleet sizes N, comma-separated")
    parser.add_argument("--replicas", default="2,3", help="sharded replica counts run at the largest N")
    parser.add_argument("--window", type=float, default=60.0, help="measured seconds per run (after warm-up)")
    parser.add_argument("--warmup", type=float, default=INTERVAL + 5,
                        help="seconds before the window; past ~300 clusters the first pass (every object's "
                             "first reconcile, heavier) outlasts the default, so the window measures it")
    parser.add_argument("--workers", type=int, default=0, help="ClusterConnection workers (0: the default)")
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="N = 1, 100, 300; 2 replicas; 30 s windows")
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
            for index in range(CLUSTERS):
                write_cluster(root / f"cluster-{index}", args.nodes, args.pods)
                process, url = start_emulator(root / f"cluster-{index}")
                emulators.append(process)
                urls.append(url)
            bare = bare_fetch_and_decode(urls[0], 20)
            print(f"fleet benchmark: {CLUSTERS} emulated clusters of {args.nodes} nodes / {args.pods} pods, "
                  f"{INTERVAL} s interval, {window:.0f} s measured per run, {workers} workers per replica")
            print(f"bare fetch-and-decode of one reconcile's pages (urllib3 + typed decoders, this process): "
                  f"{bare * 1000:.1f} ms CPU")
            print(f"{'N':>6} {'replicas':>8} {'done/due':>14} {'ctrl cores':>10} {'ms/reconcile':>12} "
                  f"{'x bare':>7} {'max ms/rec':>10} {'RSS MiB':>8} {'emulator cores':>14}")
            runs = [(n, 1) for n in sizes] + [(max(sizes), r) for r in sharded]
            for count, replicas in runs:
                hub_dir = root / f"hub-{count}-{replicas}"
                write_hub(hub_dir, urls, count)
                kubeconfig = hub_dir / "kubeconfig"
                hub, _url = start_emulator(hub_dir, kubeconfig)
                subprocess.run(["redis-cli", "-p", str(redis_server.port), "FLUSHALL"], check=False,
                               capture_output=True)
                emu0 = sum(cpu_seconds(p.pid) for p in [*emulators, hub])
                try:
                    result = run_fleet(kubeconfig, redis_server.port, replicas, workers, window,
                                       count / INTERVAL, hub_dir, warmup)
                    emu = (sum(cpu_seconds(p.pid) for p in [*emulators, hub]) - emu0) / (window + warmup)
                finally:
                    hub.terminate()
                    hub.wait(30)
                print(f"{count:>6} {replicas:>8} {result['done']:>6.0f}/{result['due']:<7.0f} "
                      f"{result['cores']:>10.2f} {result['per_reconcile_ms']:>12.1f} "
                      f"{result['per_reconcile_ms'] / (bare * 1000):>7.2f} {result['per_replica_ms']:>10.1f} "
                      f"{result['rss']:>8.0f} {emu:>14.2f}", flush=True)
    finally:
        for process in emulators:
            process.terminate()
        for process in emulators:
            process.wait(30)
        redis_server.cleanup()


if __name__ == "__main__":
    main()
