"""Fixtures of the vmwriter tests: a real victoria-metrics, a recording HTTP peer, piece factories."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest
import urllib3
from clusterpulse_model import (
    AggregationResults,
    ClusterMetrics,
    ClusterOperatorInfo,
    NodeMetrics,
    OperatorInfo,
)
from clusterpulse_model.pieces import (
    AggregationsPiece,
    ClusterMetricsPiece,
    ClusterOperatorsPiece,
    NodesPiece,
    OperatorsPiece,
)
from clusterpulse_testing.servers import ServerProcess, ServerUnavailable, require_binary

from clusterpulse_core import serde
from clusterpulse_core.pieces import Piece

#: (metric name, sorted label pairs without __name__) -> {timestamp_ms: value}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], dict[int, float]]


class VictoriaMetrics:
    """A real single-node victoria-metrics on a loopback port, with export helpers."""

    def __init__(self, binary: str, username: str = "", password: str = "") -> None:
        self.username = username
        self.password = password
        self._binary = binary
        self._http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(total=10))
        self.server = ServerProcess("victoria-metrics", self._command, self._healthy)

    def _command(self, port: int, workdir: Path) -> list[str]:
        argv = [
            self._binary,
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-storageDataPath={workdir / 'data'}",
            "-retentionPeriod=100y",
            "-search.latencyOffset=0s",
            "-search.disableCache",
            "-loggerLevel=ERROR",
        ]
        if self.username:
            argv += [f"-httpAuth.username={self.username}", f"-httpAuth.password={self.password}"]
        return argv

    def _headers(self) -> dict[str, str]:
        if not self.username:
            return {}
        return urllib3.make_headers(basic_auth=f"{self.username}:{self.password}")

    def _healthy(self, port: int) -> bool:
        try:
            response = self._http.request("GET", f"http://127.0.0.1:{port}/health", headers=self._headers())
        except urllib3.exceptions.HTTPError:
            return False
        return response.status == 200

    @property
    def url(self) -> str:
        """The base URL writers use."""
        return f"http://127.0.0.1:{self.server.port}"

    def start(self) -> VictoriaMetrics:
        """Start (again, on the same port and data directory)."""
        try:
            self.server.start()
        except ServerUnavailable as exc:
            pytest.fail(str(exc), pytrace=False)
        return self

    def stop(self) -> None:
        """Stop the server (an outage); the data directory is kept."""
        self.server.stop()

    def export(self, match: str = '{__name__=~"clusterpulse_.*"}') -> Samples:
        """Every stored sample of the matching series (flushes first so fresh samples are visible)."""
        flushed = self._http.request("GET", f"{self.url}/internal/force_flush", headers=self._headers())
        assert flushed.status == 200, flushed.data
        response = self._http.request(
            "GET",
            f"{self.url}/api/v1/export",
            headers=self._headers(),
            fields={"match[]": match, "start": "0", "end": str(int(time.time()) + 86400)},
        )
        assert response.status == 200, response.data
        samples: Samples = {}
        for line in response.data.splitlines():
            if not line.strip():
                continue
            series = serde.loads(line)
            labels = dict(series["metric"])
            name = labels.pop("__name__")
            key = (name, tuple(sorted(labels.items())))
            points = samples.setdefault(key, {})
            for ts, value in zip(series["timestamps"], series["values"], strict=True):
                points[int(ts)] = float(value)
        return samples

    def cleanup(self) -> None:
        """Stop and remove the data."""
        self.server.cleanup()


@pytest.fixture
def victoria_metrics() -> Iterator[Callable[..., VictoriaMetrics]]:
    """Factory of fresh victoria-metrics servers: ``victoria_metrics(username=..., password=...)``."""
    binary = require_binary("victoria-metrics", "victoria-metrics", extra_paths=["/usr/bin/victoria-metrics"])
    started: list[VictoriaMetrics] = []

    def factory(username: str = "", password: str = "") -> VictoriaMetrics:
        server = VictoriaMetrics(binary, username, password)
        started.append(server)
        return server.start()

    yield factory
    for server in started:
        server.cleanup()


@pytest.fixture
def vm(victoria_metrics: Callable[..., VictoriaMetrics]) -> VictoriaMetrics:
    """One fresh victoria-metrics without authentication."""
    return victoria_metrics()


# --------------------------------------------------------------------------- a recording HTTP peer


@attrs.frozen
class Recorded:
    """One request the recording peer received (body decompressed)."""

    method: str
    path: str
    headers: dict[str, str]
    raw_body: bytes
    body: bytes


class ImportRecorder:
    """A loopback HTTP server standing in for VictoriaMetrics where its logs would not show what we check.

    It records every request; ``status`` is what it answers; while ``gate`` is clear it holds
    each request (up to 10 s), to show that writers do not wait for it.
    """

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.status = 204
        self.gate = threading.Event()
        self.gate.set()
        self.arrived = threading.Event()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw
                headers = {name.lower(): value for name, value in self.headers.items()}
                recorder.requests.append(Recorded("POST", self.path, headers, raw, body))
                recorder.arrived.set()
                recorder.gate.wait(10)
                self.send_response(recorder.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Base URL of the peer."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def lines(self) -> list[str]:
        """Every line of every recorded body, in arrival order."""
        return [line for req in self.requests for line in req.body.decode().splitlines()]

    def close(self) -> None:
        """Release held requests and stop serving."""
        self.gate.set()
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def recorder() -> Iterator[ImportRecorder]:
    """A recording HTTP peer on a free loopback port."""
    peer = ImportRecorder()
    yield peer
    peer.close()


# --------------------------------------------------------------------------- pieces


def at(minutes_ago: float) -> datetime:
    """A collection time this many minutes before now, on a whole millisecond."""
    moment = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def ms(moment: datetime) -> int:
    """Unix milliseconds of an aware datetime."""
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def node(name: str, when: datetime, index: int = 0) -> NodeMetrics:
    """A node with a distinct value in every gauge."""
    return NodeMetrics(
        name=name,
        timestamp=when,
        cpu_usage_percent=11.290322580645162 + index,
        memory_usage_percent=42.5,
        pods_total=12 + index,
        pods_running=10,
        cpu_capacity=16.0,
        memory_capacity=68719476736,
        storage_capacity=107374182400,
        pods_capacity=110,
        cpu_allocatable=15.5,
        memory_allocatable=66571993088,
        storage_allocatable=96636764160,
        pods_allocatable=109,
        cpu_requested=1.75,
        memory_requested=4294967296,
        pods_pending=1,
        pods_failed=0,
        pods_succeeded=1,
    )


def cluster_metrics(when: datetime) -> ClusterMetrics:
    """Cluster totals with distinct values."""
    return ClusterMetrics(
        timestamp=when,
        nodes=3,
        nodes_ready=2,
        namespaces=7,
        pods=36,
        pods_running=30,
        cpu_capacity=48.0,
        memory_capacity=206158430208,
        deployments=9,
    )


def reconcile_pieces(cluster: str, when: datetime, nodes: int = 2) -> list[Piece]:
    """What one cluster reconcile stores: nodes, cluster metrics, OLM operators, ClusterOperators."""
    return [
        NodesPiece(cluster, tuple(node(f"worker-{i}", when, i) for i in range(nodes))),
        ClusterMetricsPiece(cluster, cluster_metrics(when)),
        OperatorsPiece(cluster, (OperatorInfo(name="cert-manager.v1.12.0"), OperatorInfo(name="etcd.v0.9.4"))),
        ClusterOperatorsPiece(
            cluster,
            (ClusterOperatorInfo(name="dns", available=True, progressing=False, degraded=True, upgradeable=False),),
        ),
    ]


def aggregation_piece(cluster: str, source_id: str, when: datetime) -> AggregationsPiece:
    """A MetricSource result with a plain, a bool, a grouped, a null and a text value."""
    return AggregationsPiece(
        cluster,
        AggregationResults(
            source_id=source_id,
            computed_at=when,
            values={
                "total-cpu": 8.5,
                "count": 3,
                "all_ready": True,
                "by_phase": {"Running": 2, "Pending": 1, 'we"ird\\key\n': 4, "odd": "x"},
                "nothing": None,
                "label": "abc",
            },
        ),
    )


@pytest.fixture
def pieces() -> Any:
    """The piece builders above, for tests (``pieces.reconcile(...)``, ``pieces.at(...)``)."""

    class Builders:
        at = staticmethod(at)
        ms = staticmethod(ms)
        node = staticmethod(node)
        cluster_metrics = staticmethod(cluster_metrics)
        reconcile = staticmethod(reconcile_pieces)
        aggregation = staticmethod(aggregation_piece)

    return Builders
