"""The ingester plugin: the hub's gRPC ingester and the ``clusterpulse agent`` command (push mode)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import click
from clusterpulse_model import AgentCertificate, AgentConnection, IngesterTransport

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config
from clusterpulse_core.context import Runtime
from clusterpulse_core.hookspecs import HookDeclarer
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.store import StorageBackend
from clusterpulse_ingester.agents import AgentBook
from clusterpulse_ingester.certs import KeyPair
from clusterpulse_ingester.connections import ConnectionTable
from clusterpulse_ingester.server import IngesterServer
from clusterpulse_ingester.settings import IngesterSettings
from clusterpulse_ingester.sources import SourceBook


class IngesterPlugin:
    """Receives collector agents' streams on the hub; provides the agent itself as a command."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.settings = IngesterSettings()
        self.table = ConnectionTable()
        self.book = SourceBook(on_change=self._sources_changed)
        self.agents = AgentBook()
        self.server: IngesterServer | None = None
        self.config: Config | None = None

    def _sources_changed(self) -> None:
        if self.server is not None:
            self.server.push_config()

    @hookimpl
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        """Declare this plugin's hooks (:mod:`clusterpulse_ingester.hookspecs`)."""
        from clusterpulse_ingester import hookspecs

        pluginmanager.add_hookspecs(hookspecs)

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.ingester]`` is validated by :class:`IngesterSettings`."""
        return IngesterSettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: IngesterSettings | None) -> None:
        """Keep the validated settings."""
        self.settings = settings or IngesterSettings()
        self.config = config

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[StorageBackend]:
        """The MetricSource book (stored definitions become the agents' configuration, C5) and the
        agent book (the hub's ``agent`` status decisions, repeated in the statuses batches store)."""
        return [self.book, self.agents] if self.settings.enabled else []

    @hookimpl
    def clusterpulse_start(self, runtime: Runtime) -> None:
        """Start the gRPC server (``INGESTER_ENABLED``); a bad port or TLS key pair fails start-up."""
        if not self.settings.enabled:
            return
        self.server = IngesterServer(self.settings, runtime, self.table, self.book, agents=self.agents)
        self.agents.on_health_change = self.server.health_changed
        self.server.start()

    @hookimpl
    def clusterpulse_storage_lost(self, runtime: Runtime, reason: str) -> None:
        """Storage lost its data: the last pushed OLM operators of each cluster are written again
        (agents send them only when they scan)."""
        if self.server is not None:
            self.server.storage_lost()

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        """Ack in-flight batches, then close every agent stream and the server."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    @hookimpl
    def clusterpulse_agent_connection(self, cluster: str) -> AgentConnection | None:
        """The agent registered for ``cluster`` on this ingester, if any."""
        if self.server is None:
            return None
        connection = self.table.get(cluster)
        return None if connection is None else attrs.evolve(connection, health=self.agents.health(cluster))

    @hookimpl
    def clusterpulse_ingester_transport(self) -> IngesterTransport:
        """TLS on the ingester and client certificates, from this plugin's settings (the one source of truth)."""
        return IngesterTransport(self.settings.tls_enabled, self.settings.require_client_certificates)

    @hookimpl
    def clusterpulse_agent_certificate(self, cluster: str, current: AgentCertificate | None) -> AgentCertificate | None:
        """A client certificate for ``cluster``'s agent from the hub's CA; ``None`` when client certificates are
        not required, or this process serves no ingester with the hub's certificates."""
        if not self.settings.require_client_certificates or self.server is None:
            return None
        pair = self.server.client_certificate(
            cluster, None if current is None else KeyPair(current.cert_pem, current.key_pem)
        )
        return None if pair is None else AgentCertificate(pair.cert_pem, pair.key_pem)

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group, plugins: PluginHost) -> None:
        """``clusterpulse agent``: collect this cluster and push it to the hub's ingester."""
        from clusterpulse_ingester.agent.command import make_agent_command

        cli.add_command(make_agent_command(lambda: self.config, plugins))
