"""Helpers of the fault suite: a hub with managed clusters, and the manager as a subprocess."""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import redis
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_redis.settings import RedisSettings
from clusterpulse_testing.kube_api import any_content_crd
from clusterpulse_testing.polling import STARTUP, eventually
from clusterpulse_testing.tls import loopback_ca
from malformed_corpus import Corpus

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import (
    Outcome,
    build_runtime,
    load,
    reconcile_object,
    start_plugins,
    stop_plugins,
)

T = TypeVar("T")
HUB_NAMESPACE = "clusterpulse"
TOKEN = "fault-token"
CC_API = f"{CLUSTER_CONNECTION.group}/{CLUSTER_CONNECTION.version}"
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
#: Bound of every wait: one reconcile against loopback servers, each call of which the manager's
#: ``request_timeout`` bounds; a loaded machine slows it, only a broken path exhausts it.
WAIT = CoreSettings().request_timeout


#: One check of the Redis backend's restart watcher at most: its interval, then two commands
#: (``INFO server``, ``EXISTS clusters:all``), each bounded by the socket timeout.
RESTART_CHECK = RedisSettings().restart_check_interval + 2 * RedisSettings().socket_timeout


def wait_for_restart_check(redis_url: str) -> None:
    """Wait until the manager's Redis restart watcher has checked this server (recorded its ``run_id``).

    Observed on the server: ``INFO`` calls other than this function's own (the watcher is the only
    other caller). Two are awaited, since the watcher's second ``INFO`` starts only after its first
    check returned; bounded by two checks.
    """
    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    own = 0

    def others() -> int:
        nonlocal own
        calls = int(client.info("commandstats").get("cmdstat_info", {}).get("calls", 0))
        own += 1
        return calls - (own - 1)  # INFO is counted after it ran: our earlier calls are in

    try:
        first = others()
        eventually(lambda: others() - first >= 2, "the Redis restart watcher's check", 2 * RESTART_CHECK)
    finally:
        client.close()


def node(name: str, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A Ready node with some capacity."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}, "annotations": dict(annotations or {})},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def managed_objects(*node_names: str) -> list[dict[str, Any]]:
    """A managed cluster: a namespace and the named nodes."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        *(node(name) for name in node_names),
    ]


def olm_objects(name: str = "cert-manager") -> list[dict[str, Any]]:
    """OLM on a managed cluster: its CRDs, one Subscription and its installed ClusterServiceVersion."""
    group, version = "operators.coreos.com", "v1alpha1"
    csv = f"{name}.v1.0.0"
    return [
        any_content_crd(group, version, "Subscription", "subscriptions"),
        any_content_crd(group, version, "ClusterServiceVersion", "clusterserviceversions"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {
            "apiVersion": f"{group}/{version}",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": name},
            "spec": {"name": name},
            "status": {"installedCSV": csv},
        },
        {
            "apiVersion": f"{group}/{version}",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": csv, "namespace": name, "creationTimestamp": "2024-11-01T08:00:00Z"},
            "spec": {
                "displayName": name,
                "version": "1.0.0",
                "provider": {"name": "Example"},
                "installModes": [{"type": "AllNamespaces", "supported": True}],
            },
            "status": {"phase": "Succeeded"},
        },
    ]


def secret(name: str, data: Mapping[str, str]) -> dict[str, Any]:
    """A Secret in the hub namespace."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": HUB_NAMESPACE},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def make_hub(kube_api: Callable[..., Any], *crds: Any) -> Any:
    """A hub emulator with the ClusterConnection CRD (and ``crds``) and the hub namespace."""
    hub = kube_api()
    for kind in (CLUSTER_CONNECTION, *crds):
        hub.add_crd(kind.group, kind.version, kind.kind, kind.plural, short_names=kind.short_names)
    hub.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HUB_NAMESPACE}}])
    return hub


def add_cluster(hub: Any, name: str, endpoint: str, **spec: Any) -> None:
    """A token Secret (with the CA of the emulators' and proxies' HTTPS) and a ClusterConnection for ``endpoint``."""
    hub.create(secret(f"{name}-token", {"token": TOKEN, "ca.crt": loopback_ca().ca_pem}))
    hub.create(
        {
            "apiVersion": CC_API,
            "kind": "ClusterConnection",
            "metadata": {"name": name, "namespace": HUB_NAMESPACE},
            "spec": {"endpoint": endpoint, "credentialsRef": {"name": f"{name}-token"}, **spec},
        }
    )


def write_config(
    path: Path,
    redis_url: str,
    core: Mapping[str, Any] | None = None,
    plugins: Mapping[str, Mapping[str, Any]] | None = None,
    enabled: tuple[str, ...] = ("redis", "cluster"),
) -> Path:
    """A config file: no probe servers unless asked, the given core and plugin settings."""
    lines = ["[clusterpulse]", f"plugins = {list(enabled)!r}".replace("'", '"'), f'namespace = "{HUB_NAMESPACE}"']
    core = {"metrics_bind_address": "0", "health_probe_bind_address": "0", **(core or {})}
    lines += [f"{key} = {_toml(value)}" for key, value in core.items()]
    sections: dict[str, dict[str, Any]] = {"redis": {"url": redis_url}}
    for name, values in (plugins or {}).items():
        sections.setdefault(name, {}).update(values)
    for name, values in sections.items():
        lines.append(f"[plugins.{name}]")
        lines += [f"{key} = {_toml(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


class ManagerProcess:
    """``clusterpulse run`` as a subprocess against ``hub``, logging to a file."""

    def __init__(self, config: Path, hub: Any, workdir: Path, name: str = "manager") -> None:
        self.log_path = workdir / f"{name}.log"
        kubeconfig = hub.write_kubeconfig(workdir / f"{name}.kubeconfig")
        env = dict(os.environ, KUBECONFIG=str(kubeconfig), CLUSTERPULSE_CONFIG=str(config))
        env.pop("REDIS_HOST", None)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from clusterpulse_core.cli import main; main()", "run"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        """The process id."""
        return self.process.pid

    def log(self) -> str:
        """Everything logged so far."""
        return self.log_path.read_text(errors="replace")

    def wait_log(self, pattern: str, timeout: float = STARTUP) -> re.Match[str]:
        """Wait until a log line matches ``pattern`` (by default bounded as a start-up is)."""

        def found() -> re.Match[str] | None:
            assert self.process.poll() is None or re.search(pattern, self.log()), (
                f"manager exited ({self.process.returncode}) before logging {pattern!r}:\n{self.log()[-3000:]}"
            )
            return re.search(pattern, self.log(), re.M)

        match: re.Match[str] = eventually(found, f"log line {pattern!r}", timeout)
        return match

    def eventually(self, condition: Callable[[], T], what: str, timeout: float) -> T:
        """:func:`eventually`, with the end of this process's log in the failure message."""
        try:
            return eventually(condition, what, timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the manager's log ends:\n{self.log()[-3000:]}") from exc

    def log_time(self, pattern: str) -> float:
        """The wall time (epoch seconds) of the first log line matching ``pattern``."""
        for line in self.log().splitlines():
            if re.search(pattern, line):
                stamp = LOG_TIME.match(line)
                assert stamp, line
                return datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        raise AssertionError(f"no log line matches {pattern!r}")

    def signal(self, signum: signal.Signals) -> None:
        """Send a signal."""
        self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        """Wait for the exit code (bounded)."""
        return self.process.wait(timeout=timeout)

    def peak_rss_mb(self) -> float:
        """The process's peak resident set size so far (VmHWM), MiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc status")

    def stop(self) -> None:
        """Make sure the process is gone."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=10)


# --- the malformed-CR corpus (its shared parts are in tests/malformed_corpus.py) -----------------------


@contextmanager
def corpus_object(
    corpus: Corpus,
    hub: Any,
    redis_url: str,
    workdir: Path,
    enabled: tuple[str, ...],
    prepare: Callable[[Runtime], None] | None = None,
) -> Iterator[tuple[Callable[..., tuple[dict[str, Any], Outcome]], redis.Redis]]:
    """The corpus object reconciled healthy by started plugins; yields ``reconcile(spec=good)`` and a Redis client.

    ``reconcile`` hands the controller the stored object with ``spec`` (as an informer would,
    whatever the API server admitted) and returns the status written and the outcome.
    """
    config, host = load(str(write_config(workdir / "config.toml", redis_url, enabled=enabled)), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    start_plugins(runtime)
    kind = corpus.kind

    def reconcile(spec: Any = None) -> tuple[dict[str, Any], Outcome]:
        current = hub.get(kind.api_version, kind.plural, corpus.name, HUB_NAMESPACE)
        outcome = reconcile_object(
            runtime, corpus.controller, kind, {**current, "spec": corpus.good if spec is None else spec}
        )
        assert "Traceback" not in (outcome.detail or "")
        status = hub.get(kind.api_version, kind.plural, corpus.name, HUB_NAMESPACE).get("status") or {}
        return dict(status), outcome

    try:
        if prepare is not None:
            prepare(runtime)
        hub.create(corpus.body(corpus.good))
        status, _ = reconcile()
        assert status[corpus.state] == corpus.healthy, status
        yield reconcile, client
    finally:
        stop_plugins(runtime)
        client.close()
