"""``clusterpulse agent``: the push-mode collector agent as a command of the same image."""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import sys
from collections.abc import Callable
from importlib import metadata

import click
from prometheus_client import CollectorRegistry

from clusterpulse_core.config import Config
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_ingester.settings import IngesterSettings

log = logging.getLogger(__name__)


def agent_version() -> str:
    """The version the agent reports at registration (the ingester distribution's, else ``dev``)."""
    try:
        return metadata.version("clusterpulse-ingester")
    except metadata.PackageNotFoundError:
        return "dev"


def local_client(kubeconfig: str, timeout: float, service_account_dir: str, version: str = "dev") -> KubeClient:
    """The agent's own cluster, found as the hub's is (:func:`clusterpulse_core.kube.hub.hub_client`):
    ``kubeconfig``, ``$KUBECONFIG``, the pod's service account in ``service_account_dir``, ``~/.kube/config``."""
    from clusterpulse_core.kube.hub import hub_client

    client = hub_client(kubeconfig, timeout=timeout, service_account_dir=service_account_dir)
    client.name = "local"
    # Audit logs (and the tests' API emulator) tell the agent's reads from the hub's pulls.
    client.api_client.user_agent = f"clusterpulse-agent/{version}"
    return client


def run_agent(config: Config, host: PluginHost, kubeconfig: str) -> int:
    """Build the agent from the loaded plugins and run it until SIGTERM/SIGINT; returns the exit code."""
    from clusterpulse_core.runtime.probes import ProbeServer, metrics_reply, parse_bind_address
    from clusterpulse_ingester.agent.runner import Agent

    settings = config.plugin("ingester") or IngesterSettings()
    if not settings.cluster_name:
        log.error("CLUSTER_NAME is required")
        return 1
    try:
        client = local_client(
            kubeconfig or config.core.kubeconfig,
            config.core.request_timeout,
            settings.service_account_dir,
            agent_version(),
        )
    except Exception as exc:
        log.error("cannot reach the local cluster: %s", exc)
        return 1
    registry = CollectorRegistry()
    agent = Agent(settings, host, client, registry, version=agent_version())
    probe = None
    address = parse_bind_address(config.core.metrics_bind_address)
    if address is not None:
        probe = ProbeServer(
            "metrics",
            address,
            {"/metrics": metrics_reply(registry)},
            config.core.probe_request_timeout,
            config.core.probe_max_connections,
        )
        probe.start()
        log.info("agent metrics on port %d", probe.port)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, agent.request_stop)
        return await agent.run()

    log.info(
        "agent for cluster %s -> %s (TLS %s), every %ss",
        settings.cluster_name,
        settings.ingester_address,
        "on" if settings.tls_enabled else "off",
        settings.collect_interval,
    )
    try:
        return asyncio.run(main())
    finally:
        if probe is not None:
            probe.stop()
        client.close()


def make_agent_command(config: Callable[[], Config | None], host: PluginHost) -> click.Command:
    """The ``agent`` command over the loaded plugins (``config`` gives the validated configuration)."""

    def loaded_config() -> Config:
        from clusterpulse_core.cliutils import fail
        from clusterpulse_core.logs import configure_logging

        loaded = config()
        if loaded is None:
            fail("the ingester plugin was not configured")
        configure_logging(loaded.core.log_level)
        return loaded

    @click.group("agent", invoke_without_command=True)
    @click.option("--kubeconfig", default="", help="collect this cluster instead of the in-cluster service account")
    @click.pass_context
    def agent_command(ctx: click.Context, kubeconfig: str) -> None:
        """Run the push-mode collector agent: collect this cluster, stream it to the hub's ingester."""
        if ctx.invoked_subcommand is None:
            sys.exit(run_agent(loaded_config(), host, kubeconfig))

    @agent_command.command("rotate-token")
    @click.argument("cluster")
    @click.option(
        "--grace",
        type=float,
        default=None,
        help="seconds the current token is still accepted (default: token_rotation_grace)",
    )
    def rotate_token_command(cluster: str, grace: float | None) -> None:
        """On the hub: give CLUSTER's agent a new collector token; the current one stays valid for the grace."""
        sys.exit(rotate_token(loaded_config(), cluster, grace))

    @agent_command.command("rotate-ca")
    @click.option(
        "--grace",
        type=float,
        default=None,
        help="seconds the current CA still issues the ingester's certificate (default: tls_ca_rotation_grace)",
    )
    def rotate_ca_command(grace: float | None) -> None:
        """On the hub: make a new ingester CA; agents get the bundle with both, the current CA issues for the grace."""
        sys.exit(rotate_ca(loaded_config(), grace))

    return agent_command


#: Longest rotation grace, seconds (ten years): a longer one is no rotation, and past year 9999 a date overflows.
MAX_GRACE = 10 * 365 * 86_400


def _grace(given: float | None, configured: float, key: str) -> float:
    """The grace of a rotation: ``--grace`` if given, else the setting ``key``; a finite number of seconds
    from 0 to :data:`MAX_GRACE`, else the command fails naming where it came from."""
    from clusterpulse_core.cliutils import fail

    seconds, where = (configured, f"plugins.ingester.{key}") if given is None else (given, "--grace")
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_GRACE):
        fail(f"{where}: must be a number of seconds from 0 to {MAX_GRACE} (ten years), got {seconds:g}")
    return seconds


def rotate_ca(config: Config, grace: float | None) -> int:
    """Rotate the hub's ingester CA (with the hub's kubeconfig); returns the exit code."""
    from datetime import timedelta

    from clusterpulse_core.cliutils import fail
    from clusterpulse_core.clock import utcnow
    from clusterpulse_core.kube.hub import hub_client
    from clusterpulse_ingester.certs import CA_SECRET, CertificateError, CertificateKeeper

    settings = config.plugin("ingester") or IngesterSettings()
    seconds = _grace(grace, settings.tls_ca_rotation_grace, "tls_ca_rotation_grace")
    namespace = config.core.namespace
    try:
        hub = hub_client(config.core.kubeconfig, timeout=config.core.request_timeout)
        keeper = CertificateKeeper(
            hub,
            namespace,
            [],
            timedelta(days=settings.tls_ca_lifetime_days),
            timedelta(days=settings.tls_cert_lifetime_days),
            timeout=config.core.request_timeout,
        )
        keeper.rotate_ca(utcnow(), timedelta(seconds=seconds))
    except (CertificateError, OSError) as exc:
        fail(f"rotating the ingester CA (Secret {namespace}/{CA_SECRET}): {exc}")
    click.echo(
        f"rotated the ingester CA (Secret {namespace}/{CA_SECRET}); the ingester publishes both CAs at its next "
        f"check and issues its certificate from the new one in {seconds:g} s"
    )
    return 0


def rotate_token(config: Config, cluster: str, grace: float | None) -> int:
    """Rotate the hub-minted collector token of ``cluster`` (with the hub's kubeconfig); returns the exit code."""
    from datetime import timedelta

    from clusterpulse_model import collector_token

    from clusterpulse_core.cliutils import fail
    from clusterpulse_core.clock import utcnow
    from clusterpulse_core.kube.client import KubeApiError, NotFoundError
    from clusterpulse_core.kube.hub import hub_client
    from clusterpulse_ingester.auth import valid_cluster_name

    settings = config.plugin("ingester") or IngesterSettings()
    if not valid_cluster_name(cluster):
        fail(f"CLUSTER: {cluster[:80]!r} is not a valid ClusterConnection name")
    if settings.collector_token_source != collector_token.HUB:
        fail(
            'collector_token_source is "credentials": the agents use the ClusterConnection\'s credentials '
            "token; rotate that Secret instead"
        )
    seconds = _grace(grace, settings.token_rotation_grace, "token_rotation_grace")
    namespace = config.core.namespace
    name = collector_token.secret_name(cluster)
    try:
        hub = hub_client(config.core.kubeconfig, timeout=config.core.request_timeout)
        until = collector_token.rotate(
            hub, namespace, cluster, timedelta(seconds=seconds), utcnow(), timeout=config.core.request_timeout
        )
    except NotFoundError:
        fail(f"no collector token Secret {namespace}/{name}: is {cluster!r} a push-mode cluster the hub deployed?")
    except (KubeApiError, OSError) as exc:
        fail(f"rotating {namespace}/{name}: {exc}")
    click.echo(
        f"rotated the collector token of {cluster} (Secret {namespace}/{name}); the previous token is "
        f"accepted until {until.strftime('%Y-%m-%dT%H:%M:%SZ')}; the hub gives the agent the new one at "
        "its next reconcile"
    )
    return 0
