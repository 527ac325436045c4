"""VictoriaMetrics history write throughput for a 500-node cluster.

Starts a real ``victoria-metrics`` on a free loopback port and measures, in one run:

* ``render``: turning the pieces of one reconcile into request bodies (the only work
  ``store()`` does on the reconcile's thread);
* ``writer``: ``store()`` plus waiting until the sender thread delivered it (format + POST);
* ``raw``: a bare urllib3 POST of the very same body, the floor for one HTTP import.

Each is run with gzip (the default above 64 KiB) and without. Figures are samples per second;
the ratio is writer / raw (1.0 = the writer adds nothing over the bare POST).

    .venv/bin/python benchmarks/bench_vmwriter.py [--nodes 500] [--rounds 20]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import urllib3
from clusterpulse_model import ClusterMetrics, NodeMetrics
from clusterpulse_model.pieces import ClusterMetricsPiece, NodesPiece
from clusterpulse_testing.servers import ServerProcess
from clusterpulse_vmwriter import VMSettings, VMWriterBackend
from clusterpulse_vmwriter.client import gzip_body
from clusterpulse_vmwriter.render import render_batch

from clusterpulse_core.pieces import Piece


def cluster_pieces(nodes: int, when: datetime) -> list[Piece]:
    """One reconcile of a cluster with ``nodes`` nodes (17 series each, plus 8 cluster series)."""
    node_metrics = tuple(
        NodeMetrics(
            name=f"ip-10-0-{i // 250}-{i % 250}.eu-west-1.compute.internal",
            timestamp=when,
            cpu_usage_percent=100 * (i % 97) / 97,
            memory_usage_percent=33.33333333333333 + i % 7,
            pods_total=30 + i % 80,
            pods_running=28 + i % 70,
            cpu_capacity=16.0,
            memory_capacity=68719476736,
            storage_capacity=107374182400,
            pods_capacity=110,
            cpu_allocatable=15.89,
            memory_allocatable=66571993088,
            storage_allocatable=96636764160,
            pods_allocatable=110,
            cpu_requested=7.25 + i % 5 / 4,
            memory_requested=2147483648 * (i % 9),
            pods_pending=i % 3,
            pods_failed=i % 2,
            pods_succeeded=i % 4,
        )
        for i in range(nodes)
    )
    totals = ClusterMetrics(
        timestamp=when,
        nodes=nodes,
        nodes_ready=nodes,
        namespaces=120,
        pods=nodes * 60,
        pods_running=nodes * 55,
        cpu_capacity=16.0 * nodes,
        memory_capacity=68719476736 * nodes,
        deployments=900,
    )
    return [NodesPiece("bench", node_metrics), ClusterMetricsPiece("bench", totals)]


def start_victoria_metrics() -> ServerProcess:
    """A victoria-metrics on a free loopback port (fails with the apt command when missing)."""
    binary = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"
    if not Path(binary).exists():
        sys.exit("victoria-metrics is not installed: run `sudo apt-get install -y victoria-metrics`")
    server = ServerProcess(
        "victoria-metrics",
        lambda port, workdir: [
            binary,
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-storageDataPath={workdir / 'data'}",
            "-retentionPeriod=100y",
            "-loggerLevel=ERROR",
        ],
    )
    return server.start()


def rate(rounds: int, samples: int, run: Callable[[int], None]) -> float:
    """Samples per second of ``run(0..rounds-1)``."""
    started = time.perf_counter()
    for index in range(rounds):
        run(index)
    return samples * rounds / (time.perf_counter() - started)


def report(label: str, rates: list[float], samples: int) -> float:
    """Print the median rate of the repetitions and return it."""
    median = statistics.median(rates)
    print(f"  {label:<38} {median:>12,.0f} samples/s  ({samples / median * 1000:6.1f} ms per reconcile)")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="repetitions; the median is reported")
    args = parser.parse_args()

    server = start_victoria_metrics()
    url = f"http://127.0.0.1:{server.port}"
    base = datetime.now(UTC) - timedelta(days=1)
    cycle = iter(range(10**9))

    def fresh_rounds() -> list[list[Piece]]:
        """Pieces of ``rounds`` reconciles, each at a collection time never written before."""
        return [cluster_pieces(args.nodes, base + timedelta(seconds=next(cycle))) for _ in range(args.rounds)]

    first = render_batch(fresh_rounds()[0], 0, 1_000_000)
    assert first is not None and len(first.chunks) == 1
    samples = first.samples
    body = first.chunks[0].body
    print(
        f"{args.nodes} nodes: {samples} samples per reconcile, body {len(body) / 1024:.0f} KiB "
        f"({len(gzip_body(body)) / 1024:.0f} KiB gzipped); {args.rounds} reconciles x {args.repeat}, "
        f"median; victoria-metrics on 127.0.0.1:{server.port}"
    )

    pool = urllib3.PoolManager(maxsize=1, retries=False)

    def raw_post(payload: bytes, headers: dict[str, str]) -> None:
        response = pool.request("POST", f"{url}/api/v1/import/prometheus", body=payload, headers=headers)
        assert response.status < 300, response.data

    try:
        rounds = fresh_rounds()
        render_rates = [
            rate(args.rounds, samples, lambda i: render_batch(rounds[i], 0, 20000) and None) for _ in range(args.repeat)
        ]
        report("render only (the work store() does)", render_rates, samples)
        for mode, compress_above in (("gzip", 65536), ("plain", 1 << 40)):
            backend = VMWriterBackend(VMSettings(endpoint=url, enabled=True, compress_above=compress_above))
            headers = {"Content-Type": "text/plain"}
            if mode == "gzip":
                headers["Content-Encoding"] = "gzip"
            writer_rates, raw_rates = [], []
            for _ in range(args.repeat + 1):  # the first repetition warms up and is not counted
                writes = fresh_rounds()

                def write(i: int, backend: VMWriterBackend = backend, writes: list[list[Piece]] = writes) -> None:
                    backend.store(writes[i])
                    assert backend.flush(60)

                # The raw POST sends the bodies the writer would send, rendered beforehand.
                bodies: list[bytes] = []
                for pieces in fresh_rounds():
                    batch = render_batch(pieces, 0, 1_000_000)
                    assert batch is not None
                    plain = batch.chunks[0].body
                    bodies.append(gzip_body(plain) if mode == "gzip" else plain)
                writer_rates.append(rate(args.rounds, samples, write))

                def post(i: int, bodies: list[bytes] = bodies, headers: dict[str, str] = headers) -> None:
                    raw_post(bodies[i], headers)

                raw_rates.append(rate(args.rounds, samples, post))
            backend.close()
            dropped = backend.metrics.registry.get_sample_value("clusterpulse_vm_dropped_samples_total")
            assert dropped == 0, dropped
            print(f"{mode}:")
            writer = report("writer: store() until delivered", writer_rates[1:], samples)
            raw = report("raw urllib3 POST of the same body", raw_rates[1:], samples)
            print(f"  ratio writer / raw POST: {writer / raw:.2f}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
