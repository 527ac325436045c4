"""``clusterpulse demo``: the real manager, plugins and Redis against the emulated fleet."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import click
import redis
from clusterpulse_testing.servers import ServerUnavailable, docker_registry_process, free_port, redis_process

from clusterpulse_core.config import CoreSettings, RawConfig, finish_config, read_config
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime
from clusterpulse_core.runtime.manager import Manager
from clusterpulse_demo.fleet import FLEET_DIR, Fleet, ManagedCluster, running_fleet
from clusterpulse_demo.summary import (
    format_alerts,
    format_fleet,
    format_registries,
    format_sources,
    key_patterns,
    read_alerts,
    read_fleet,
    read_registries,
    read_sources,
)

#: What the demo enables: storage first, then the kinds it has sample objects for, then alerts and
#: the ingester (push-mode clusters of the fleet are streamed by a ``clusterpulse agent`` process).
DEMO_PLUGINS = ("redis", "cluster", "registry", "metricsource", "policy", "alerts", "ingester")
#: Who the access summary asks about (the groups of hub/monitoraccesspolicies.yaml), and what.
DEMO_PRINCIPALS = (("alice", "platform-admins"), ("bob", "staging-team"), ("carol", "nobody"))
DEMO_RESOURCES = (None, "nodes", "pods")
#: Plugin sections of the demo: alerts fire at once (a demo runs for seconds, not the rules' ``for``).
DEMO_SETTINGS: dict[str, dict[str, object]] = {"alerts": {"default_for": 0.0}}
CYCLE_TIMEOUT = 120.0
#: Where the hub installs a push-mode cluster's agent (docs/compatibility.md#agent-deployment; the core does not
#: import the plugin).
AGENT_NAMESPACE = "clusterpulse-system"
AGENT_NAME = "clusterpulse-collector"
#: Seconds between a demo agent's collections (the real default is 60).
AGENT_INTERVAL = 2.0
#: Environment variables of the agent's settings: the demo's config file decides, not the caller's shell.
_AGENT_ENV = ("CLUSTER_NAME", "INGESTER_", "COLLECTOR_TOKEN", "COLLECT_INTERVAL", "BUFFER_SIZE")


class DemoError(Exception):
    """The demo cannot run (missing binary, plugin, or a cycle that never finished)."""


#: How long the demo waits for a given Redis to answer before it gives up, seconds.
REDIS_CHECK_TIMEOUT = 5.0


def check_redis(url: str) -> None:
    """Raise :class:`DemoError` unless the Redis at ``url`` answers a PING (before anything starts)."""
    try:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=REDIS_CHECK_TIMEOUT, socket_timeout=REDIS_CHECK_TIMEOUT
        )
    except ValueError as exc:
        raise DemoError(f"--redis-url {url}: {exc}") from exc
    try:
        client.ping()
    except redis.RedisError as exc:
        raise DemoError(f"--redis-url {url}: Redis does not answer: {exc}") from exc
    finally:
        client.close()


@contextlib.contextmanager
def redis_for_demo(redis_url: str | None) -> Iterator[str]:
    """The given Redis URL, or a private redis-server on a free loopback port."""
    if redis_url:
        check_redis(redis_url)
        yield redis_url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise DemoError(
            "redis-server is not installed: run `sudo apt-get install -y redis-server` "
            "(scripts/demo.sh does), or pass --redis-url"
        )
    server = redis_process(binary)
    try:
        server.start()
    except ServerUnavailable as exc:
        raise DemoError(str(exc)) from exc
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.cleanup()


@contextlib.contextmanager
def registry_for_demo(echo: Callable[[str], None]) -> Iterator[str | None]:
    """A private docker-registry on a free loopback port, or None (said so) when it cannot run."""
    binary = shutil.which("docker-registry")
    if binary is None:
        echo(
            "demo: docker-registry is not installed, skipped registries "
            "(`sudo apt-get install -y docker-registry` adds one)"
        )
        yield None
        return
    server = docker_registry_process(binary)
    try:
        server.start()
    except ServerUnavailable as exc:
        echo(f"demo: docker-registry did not start ({exc}), skipped registries")
        server.cleanup()
        yield None
        return
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.cleanup()


def _reconciles(manager: Manager) -> float:
    """Reconciles finished so far, every kind and result together."""
    total = 0.0
    for metric in manager.runtime.metrics.collect():
        if metric.name == "controller_runtime_reconcile":
            total += sum(s.value for s in metric.samples if s.name == "controller_runtime_reconcile_total")
    return total


def _idle(manager: Manager) -> bool:
    """No object queued or being reconciled (delayed requeues do not count)."""
    return all(len(c.queue) == 0 and not c.queue.in_flight for c in manager.controllers.values())


def _agent(manager: Manager, cluster: str) -> Any:
    """The ingester's ``clusterpulse_agent_connection`` answer for ``cluster`` (None without an ingester)."""
    hook = manager.runtime.plugins.hook("clusterpulse_agent_connection")
    return hook(cluster=cluster) if hook is not None else None


def _wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


@attrs.frozen
class DemoResult:
    """What the demo printed, for tests."""

    summary: str
    keys: list[tuple[str, int]]


def demo_plan(config_file: str | None) -> tuple[tuple[str, ...], dict[str, dict[str, object]]]:
    """The demo's plugins and sections, with those a config file adds (``demo --config FILE``).

    The file's plugins not among the demo's come after them, with their ``[plugins.<name>]``
    sections; the demo's own plugins keep the demo's settings (its Redis, its ingester port).
    The file is read and checked as ``run`` reads it (:class:`ConfigError` naming the key).
    """
    if config_file is None:
        return DEMO_PLUGINS, {}
    raw = read_config(Path(config_file), env={})
    added = tuple(name for name in (raw.core.plugins or ()) if name not in DEMO_PLUGINS)
    return DEMO_PLUGINS + added, {name: dict(raw.plugin_sections.get(name, {})) for name in added}


def run_demo(
    cycles: int,
    redis_url: str | None,
    echo: Callable[[str], None] = print,
    fleet_dir: Path = FLEET_DIR,
    push_agents: bool = True,
    config_file: str | None = None,
) -> DemoResult:
    """Run ``cycles`` reconcile cycles of the demo fleet and print the fleet summary and keys.

    With ``push_agents`` every push-mode cluster of the fleet gets its ``clusterpulse agent``
    process; without, those clusters are collected by pull (docs/compatibility.md#c3).
    ``config_file`` adds that file's plugins (a third-party backend or kind beside the demo's).
    """
    plugins, added_sections = demo_plan(config_file)
    host = PluginHost(plugins)
    kinds = [kind for _owner, kind in host.kinds.values()]
    with (
        redis_for_demo(redis_url) as url,
        registry_for_demo(echo) as registry_url,
        running_fleet(kinds, fleet_dir, registry_url) as fleet,
        tempfile.TemporaryDirectory(prefix="clusterpulse-demo-") as tmp,
    ):
        kubeconfig = fleet.hub.write_kubeconfig(Path(tmp) / "hub.kubeconfig")
        core = CoreSettings(
            plugins=plugins,
            namespace=fleet.namespace,
            kubeconfig=str(kubeconfig),
            metrics_bind_address="0",
            health_probe_bind_address="0",
        )
        ingester_port = free_port()
        sections: dict[str, dict[str, object]] = {
            **added_sections,
            "redis": {"url": url},
            **DEMO_SETTINGS,
            "ingester": {"bind_address": "127.0.0.1", "port": ingester_port},
        }
        raw = RawConfig(core=core, plugin_sections=sections, source="demo")
        config = finish_config(raw, host.settings_classes(), env={})
        host.configure(config)
        echo(
            f"demo: hub {fleet.hub.url}, {len(fleet.clusters)} managed clusters "
            f"({', '.join(c.name for c in fleet.clusters)}), redis {url}"
            + (f", registry {registry_url}" if registry_url else "")
            + (
                f"; plugins from {config_file}: {', '.join(plugins[len(DEMO_PLUGINS) :]) or 'none new'}"
                if config_file
                else ""
            )
        )
        pushed = _push_clusters(fleet, host) if push_agents else []
        agents: list[subprocess.Popen[bytes]] = []
        manager = Manager(build_runtime(config, host), identity="demo")
        try:
            manager.start()
            for cluster in pushed:
                deployed = _wait_for_deployment(cluster)
                echo(
                    f"demo: the hub deployed the agent on {cluster.name} ({AGENT_NAMESPACE}/{AGENT_NAME}, image "
                    f"{deployed.image}); an emulated cluster runs no pods, so the demo runs that Deployment as a "
                    f"local `clusterpulse agent` process in place of its pod"
                )
                agents.append(_start_agent(cluster, ingester_port, Path(tmp), deployed))
            for cluster in pushed:
                _wait_for(
                    lambda c=cluster: _agent(manager, c.name) is not None,  # type: ignore[misc]
                    CYCLE_TIMEOUT,
                    f"the collector agent of {cluster.name}",
                )
                echo(
                    f"demo: {cluster.name} is push mode: its `clusterpulse agent` process streams to the "
                    f"ingester on port {ingester_port}"
                )
            _run_cycles(manager, fleet, cycles, echo)
            if pushed:
                _wait_for(
                    lambda: _pushed_sources_arrived(url, [c.name for c in pushed]),
                    CYCLE_TIMEOUT,
                    "the agents' MetricSource results",
                )
            for cluster in pushed:
                connection = _agent(manager, cluster.name)
                state = (
                    (f"agent {connection.version} connected, last heartbeat {connection.last_heartbeat:%H:%M:%S}")
                    if connection
                    else "agent not connected"
                )
                echo(f"push: {cluster.name} ({state}); the other clusters are pulled")
        finally:
            for agent in agents:
                _stop_agent(agent)
            manager.stop()
        client = redis.Redis.from_url(url, decode_responses=True)
        try:
            summary = "\n\n".join(
                part
                for part in (
                    format_fleet(read_fleet(client)),
                    format_registries(read_registries(client)),
                    format_alerts(read_alerts(client)),
                    format_sources(read_sources(client)),
                    access_summary(host, [c.name for c in fleet.clusters]),
                )
                if part
            )
            keys = key_patterns(client)
        finally:
            client.close()
    echo("")
    echo(summary)
    echo("")
    echo(f"Redis keys written ({sum(n for _k, n in keys)}):")
    for pattern, count in keys:
        echo(f"  {pattern}" + (f"  x{count}" if count > 1 else ""))
    return DemoResult(summary, keys)


def access_summary(host: PluginHost, clusters: Sequence[str]) -> str:
    """Who sees what, asked through ``clusterpulse policy can-i`` (empty when no plugin adds the command)."""
    group = click.Group("clusterpulse")
    host.pm.hook.clusterpulse_add_commands(cli=group, plugins=host)
    command = group.commands.get("policy")
    if command is None:
        return ""
    header = ("USER (GROUP)", "CLUSTER", *(resource or "cluster" for resource in DEMO_RESOURCES))
    rows = [header]
    for user, group_name in DEMO_PRINCIPALS:
        for cluster in clusters:
            answers = []
            for resource in DEMO_RESOURCES:
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    command.main(
                        [
                            "can-i",
                            cluster,
                            *([resource] if resource else []),
                            "--user",
                            user,
                            "--group",
                            group_name,
                            "--json",
                        ],
                        standalone_mode=False,
                    )
                answers.append(str(json.loads(out.getvalue())["decision"]))
            rows.append((f"{user} ({group_name})", cluster, *answers))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "Access (clusterpulse policy can-i):\n" + "\n".join(f"  {line}" for line in lines)


def _run_cycles(manager: Manager, fleet: Fleet, cycles: int, echo: Callable[[str], None]) -> None:
    if not manager.wait_synced(CYCLE_TIMEOUT):
        raise DemoError("the manager's informers did not sync with the hub")
    objects = sum(len(informer.items()) for informer in manager.informers.values())
    done = 0.0
    for cycle in range(1, cycles + 1):
        if cycle > 1:
            manager.resync()
        target = done + objects
        started = time.monotonic()
        _wait_for(
            lambda t=target: _reconciles(manager) >= t and _idle(manager),  # type: ignore[misc]
            CYCLE_TIMEOUT,
            f"cycle {cycle}",
        )
        done = _reconciles(manager)
        echo(f"cycle {cycle}: reconciled {objects} objects in {time.monotonic() - started:.2f}s")


def _push_clusters(fleet: Fleet, host: PluginHost) -> list[ManagedCluster]:
    """The managed clusters in push mode, as the cluster plugin's typed view (``clusterpulse_fleet``) reads them."""
    hook = host.hook("clusterpulse_fleet")
    if hook is None:
        return []
    hub = KubeClient(fleet.hub.api_client())
    try:
        push = {cluster.name for cluster in hook().clusters(hub, fleet.namespace) if cluster.push}
    finally:
        hub.close()
    return [cluster for cluster in fleet.clusters if cluster.name in push]


@attrs.frozen
class DeployedAgent:
    """What the hub deployed on a demo cluster: the Deployment's image and environment, the token."""

    image: str
    cluster_name: str
    token: str
    #: ``INGESTER_TLS_ENABLED``, ``INGESTER_TLS_SERVER_NAME`` and the CA bundle of the ``ingester-ca`` ConfigMap.
    tls_enabled: bool = False
    tls_server_name: str = ""
    ca_pem: str = ""
    #: The client certificate and key of the ``clusterpulse-collector-tls`` Secret (mTLS), when mounted.
    client_cert_pem: str = ""
    client_key_pem: str = ""


def _wait_for_deployment(cluster: ManagedCluster) -> DeployedAgent:
    """Wait until the hub created the agent's Deployment and token Secret on ``cluster``; read them."""
    found: dict[str, Any] = {}

    def deployed() -> bool:
        found["deployment"] = cluster.api.get("apps/v1", "deployments", AGENT_NAME, AGENT_NAMESPACE)
        found["secret"] = cluster.api.get("v1", "secrets", f"{AGENT_NAME}-token", AGENT_NAMESPACE)
        return bool(found["deployment"] and found["secret"])

    _wait_for(deployed, CYCLE_TIMEOUT, f"the hub to deploy the agent on {cluster.name}")
    container = found["deployment"]["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item.get("value", "") for item in container.get("env") or ()}
    token = base64.b64decode(found["secret"]["data"]["token"]).decode()
    ca = cluster.api.get("v1", "configmaps", "ingester-ca", AGENT_NAMESPACE) if env.get("INGESTER_TLS_CA") else None
    client: dict[str, str] = {}
    if env.get("INGESTER_TLS_CLIENT_CERT"):
        secret = cluster.api.get("v1", "secrets", f"{AGENT_NAME}-tls", AGENT_NAMESPACE) or {}
        client = {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}
    return DeployedAgent(
        str(container["image"]),
        env["CLUSTER_NAME"],
        token,
        env.get("INGESTER_TLS_ENABLED") == "true",
        env.get("INGESTER_TLS_SERVER_NAME", ""),
        "".join((ca or {}).get("data", {}).values()),
        client.get("tls.crt", ""),
        client.get("tls.key", ""),
    )


def _start_agent(cluster: ManagedCluster, port: int, tmp: Path, deployed: DeployedAgent) -> subprocess.Popen[bytes]:
    """``clusterpulse agent`` as the Deployment describes it, pushing to the demo's local ingester.

    The Deployment's ``INGESTER_ADDRESS`` is the in-cluster Service name; the local process uses the
    ingester's loopback port instead, and a kubeconfig in place of the pod's service account. It
    verifies the ingester's certificate with the CA the hub copied to the cluster, as the pod does.
    """
    kubeconfig = cluster.api.write_kubeconfig(tmp / f"{cluster.name}.kubeconfig", token=cluster.token)
    config = tmp / f"agent-{cluster.name}.toml"
    ca_file = tmp / f"ingester-ca-{cluster.name}.crt"
    ca_file.write_text(deployed.ca_pem)
    tls = (
        f"tls_enabled = {'true' if deployed.tls_enabled else 'false'}\n"
        f'tls_server_name = "{deployed.tls_server_name}"\ntls_ca = "{ca_file if deployed.ca_pem else ""}"\n'
    )
    if deployed.client_cert_pem:
        # The client certificate Secret's volume, as the pod mounts it (mTLS).
        cert_file, key_file = tmp / f"client-{cluster.name}.crt", tmp / f"client-{cluster.name}.key"
        cert_file.write_text(deployed.client_cert_pem)
        key_file.write_text(deployed.client_key_pem)
        tls += f'tls_client_cert = "{cert_file}"\ntls_client_key = "{key_file}"\n'

    config.write_text(
        '[clusterpulse]\nplugins = ["cluster", "metricsource", "ingester"]\nmetrics_bind_address = "0"\n'
        'health_probe_bind_address = "0"\nlog_level = "warn"\n[plugins.ingester]\n'
        f'cluster_name = "{deployed.cluster_name}"\ningester_address = "127.0.0.1:{port}"\n'
        f'collector_token = "{deployed.token}"\ncollect_interval = {AGENT_INTERVAL}\nheartbeat_interval = 5.0\n' + tls
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(_AGENT_ENV)}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from clusterpulse_core.cli import main; main()",
            "--config",
            str(config),
            "agent",
            "--kubeconfig",
            str(kubeconfig),
        ],
        env=env,
        cwd=tmp,
    )


def _stop_agent(agent: subprocess.Popen[bytes]) -> None:
    agent.terminate()
    try:
        agent.wait(30)
    except subprocess.TimeoutExpired:
        agent.kill()
        agent.wait(5)


def _pushed_sources_arrived(url: str, clusters: list[str]) -> bool:
    """Whether every push cluster has sent results for every enabled MetricSource (agents run on a timer)."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        sources = [str(source) for source in client.smembers("metricsources:enabled")]
        return all(client.exists(f"cluster:{c}:custom:{s}:resources") for c in clusters for s in sources)
    finally:
        client.close()
