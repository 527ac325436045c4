"""The collector agent's CPU per cycle on a 500-node, 10,000-pod cluster, beside the pull reconcile.

Same emulated cluster (served from a subprocess, so its CPU is not counted), same run,
cycles alternated so machine load affects both alike:

* pull: one ClusterConnection reconcile on the hub (``reconcile_object``: collectors, pieces,
  storage in a real redis-server), ``time.process_time``;
* agent: one agent cycle in process (``Agent.collect_once``: the same collectors through
  ``clusterpulse_collectors(where="agent")``, then the MetricsBatch serialised for the wire),
  ``time.process_time``.

Then the real ``clusterpulse agent`` process runs a few cycles against a bare gRPC endpoint and
its peak RSS is read from /proc (the target is a 128 MiB container).

Targets: agent CPU per cycle <= pull reconcile CPU; agent peak RSS < 128 MiB.

    .venv/bin/python benchmarks/bench_agent.py [--nodes 500] [--pods 10000] [--cycles 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_cluster_reconcile import NAMESPACE, Runner, write_objects
from bench_ingester import EchoServer
from bench_support import proc_status, start_emulator
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_ingester.agent.runner import Agent
from clusterpulse_ingester.settings import IngesterSettings
from clusterpulse_testing.servers import free_port, redis_process, require_binary

from clusterpulse_core.kube.client import KubeClient, make_api_client
from clusterpulse_core.runtime.bootstrap import load

TARGET_RSS = 128 * 2**20


def agent_process_rss(folder: Path, url: str, cycles: int, interval: float) -> tuple[int, float, int]:
    """Run ``clusterpulse agent`` for about ``cycles`` collections: its peak RSS, CPU seconds, collections."""
    port = free_port()
    kubeconfig = folder / "agent.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: bench\n"
        f"clusters: [{{name: bench, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: bench, user: {token: bench}}]\n"
        "contexts: [{name: bench, context: {cluster: bench, user: bench}}]\n"
    )
    config = folder / "agent.toml"
    config.write_text(
        '[clusterpulse]\nplugins = ["cluster", "metricsource", "ingester"]\n'
        'metrics_bind_address = "0"\nhealth_probe_bind_address = "0"\nlog_level = "info"\n'
        f'request_timeout = 120.0\n[plugins.ingester]\ncluster_name = "big"\n'
        f'ingester_address = "127.0.0.1:{port}"\ncollector_token = "bench"\n'
        f"collect_interval = {interval}\nheartbeat_interval = 30.0\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INGESTER_", "COLLECT", "CLUSTER_NAME"))}
    log = folder / "agent.log"
    with EchoServer(port), log.open("w") as out:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "clusterpulse"),
                "--config",
                str(config),
                "agent",
                "--kubeconfig",
                str(kubeconfig),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        time.sleep(interval * cycles + 3.0)
        peak = proc_status(process.pid, "VmHWM")
        ticks = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(ticks[11]) + int(ticks[12])) / os.sysconf("SC_CLK_TCK")
        process.terminate()
        process.wait(60)
    found = [line for line in log.read_text().splitlines() if "agent stopped:" in line]
    collected = int(found[-1].split("collected=")[1].split()[0]) if found else 0
    return peak, cpu, collected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, default=3)
    args = parser.parse_args()
    redis_server = redis_process(require_binary("redis-server", "redis-server"))
    redis_server.start()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_objects(folder, args.nodes, args.pods)
        emulator, url = start_emulator(folder)
        try:
            hub = KubeClient(make_api_client(url), timeout=120)
            cc = {
                "apiVersion": CLUSTER_CONNECTION.api_version,
                "kind": "ClusterConnection",
                "metadata": {"name": "big", "namespace": NAMESPACE},
                "spec": {"endpoint": url, "credentialsRef": {"name": "big-token"}},
            }
            hub.request("POST", CLUSTER_CONNECTION.api_path(NAMESPACE), body=cc)
            pull = Runner(folder, hub, f"redis://127.0.0.1:{redis_server.port}/0", False)
            config_file = folder / "agent-inprocess.toml"
            config_file.write_text('[clusterpulse]\nplugins = ["cluster", "metricsource", "ingester"]\n')
            _config, host = load(str(config_file), env={})
            local = KubeClient(make_api_client(url, token="bench"), name="local", timeout=120)
            agent = Agent(IngesterSettings(cluster_name="big"), host, local)
            agent_cycles: list[tuple[float, float, int]] = []
            try:
                for _ in range(args.cycles):
                    pull.cycle()
                    start_cpu, start_wall = time.process_time(), time.perf_counter()
                    wire = agent.collect_once().SerializeToString()
                    agent_cycles.append((time.process_time() - start_cpu, time.perf_counter() - start_wall, len(wire)))
            finally:
                pull.close()
                local.close()
            peak, process_cpu, collected = agent_process_rss(folder, url, args.cycles, 10.0)
        finally:
            emulator.terminate()
            emulator.wait(30)
            redis_server.cleanup()
    print(f"cluster: {args.nodes} nodes, {args.pods} pods; busy shared 2-core machine")
    for index, ((pc, pw), (ac, aw, size)) in enumerate(zip(pull.cycles, agent_cycles, strict=True), 1):
        print(
            f"cycle {index}: pull reconcile {pc:.3f} s CPU ({pw:.3f} s wall) | agent {ac:.3f} s CPU "
            f"({aw:.3f} s wall, batch {size / 1024:.0f} KiB)"
        )
    pull_best, agent_best = min(c for c, _ in pull.cycles), min(c for c, _, _ in agent_cycles)
    print(
        f"agent CPU per cycle (best): {agent_best:.3f} s vs pull reconcile {pull_best:.3f} s "
        f"({agent_best / pull_best * 100:.0f} %; target <= pull: {'met' if agent_best <= pull_best else 'NOT met'})"
    )
    print(
        f"clusterpulse agent process: peak RSS {peak / 2**20:.0f} MiB after {collected} collections "
        f"(target < {TARGET_RSS // 2**20} MiB container: {'met' if peak < TARGET_RSS else 'NOT met'}); "
        f"process CPU {process_cpu:.2f} s including start-up"
    )


if __name__ == "__main__":
    main()
