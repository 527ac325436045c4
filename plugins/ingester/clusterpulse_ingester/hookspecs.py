# mypy: disable-error-code="empty-body"
"""The hooks the ingester plugin declares (through ``clusterpulse_addhooks``): push-mode connections.

The hub asks it which agent is connected for a cluster; inside the agent it hands the
MetricSource definitions the hub sent to the plugin that evaluates them; and the cluster
plugin asks which resource types an agent must read. The plugins implementing the last two
(``metricsource``) mark them ``@hookimpl(optionalhook=True)``; a caller reaches them through
``PluginHost.hook``, ``None`` when this plugin is not loaded (then there is no push mode:
every cluster is pulled).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from clusterpulse_core.hookspecs import called, hookspec

if TYPE_CHECKING:
    from clusterpulse_model import AgentCertificate, AgentConnection, IngesterTransport

    from clusterpulse_core.plugins import PluginHost


@hookspec(firstresult=True)
@called("first result; by the cluster reconcile of a push-mode cluster")
def clusterpulse_agent_connection(cluster: str) -> AgentConnection | None:
    """The push-mode collector agent currently connected for ``cluster``, if any.

    Implemented by the plugin that receives agent streams (the ingester); asked by the
    cluster reconcile before it collects a ``collectionMode: push`` cluster. ``None`` means no
    agent is connected (or no plugin receives agents): the cluster is collected by pull
    (docs/compatibility.md#c3). The answer carries the agent's version and the time it was last heard
    from, so the caller can treat a silent agent as gone.
    """


@hookspec
@called("all results; inside the agent, at every ConfigUpdate from the hub")
def clusterpulse_agent_sources(sources: Sequence[bytes], plugins: PluginHost) -> None:
    """Inside the collector agent: the hub sent the MetricSource definitions to evaluate.

    ``sources`` are the compiled MetricSource JSON documents of a ``ConfigUpdate`` (the same
    documents the hub stores under ``metricsource:<ns>:<name>``), replacing the previous set;
    an empty sequence clears it. The plugin that evaluates them compiles expressions and
    namespace patterns from their source text (docs/compatibility.md#c6), skips (and logs) a document it
    cannot use, and returns its collector from ``clusterpulse_collectors(where="agent")``.
    ``plugins`` gives the registered functions and aggregations to compile against.
    """


@hookspec
@called("all results, merged; by the cluster plugin at every agent check")
def clusterpulse_agent_read_types() -> Sequence[tuple[str, str]]:
    """Return the ``(api group, resource)`` types a push-mode collector agent must be able to read.

    The cluster plugin gives the agent it installs on a managed cluster a ClusterRole with
    ``get/list/watch`` on its own collectors' types plus every type returned here (the
    MetricSource plugin answers with the resources of the MetricSources it has compiled).
    Called at every agent check, so it must be cheap; a new type updates the role at the
    next reconcile of each push-mode cluster. ``""`` is the core API group.
    """


@hookspec(firstresult=True)
@called("first result; by the cluster plugin at every agent deploy and push status")
def clusterpulse_ingester_transport() -> IngesterTransport | None:
    """How agents reach the ingester: TLS or plaintext, and whether client certificates are required.

    Implemented by the ingester from its own settings (``[plugins.ingester] tls_enabled``,
    ``require_client_certificates``: the one source of truth); the cluster plugin gives the agents it
    deploys the matching TLS variables and client certificate, and marks plaintext push clusters
    ``InsecureTransport``. ``None`` (no ingester loaded): the cluster plugin's
    ``ingester_tls_enabled``, else TLS.
    """


@hookspec(firstresult=True)
@called("first result; by the cluster plugin's agent deploy, when client certificates are required")
def clusterpulse_agent_certificate(cluster: str, current: AgentCertificate | None) -> AgentCertificate | None:
    """The client certificate the agent of ``cluster`` presents to the ingester (mTLS).

    ``current`` is the certificate the agent has now (read from its cluster), if any: it is returned as
    it is while it names ``cluster``, was issued by a CA the ingester trusts and is not due for renewal;
    otherwise a new one is issued (by the hub's ingester CA). ``None``: the ingester issues none here
    (its certificates are your own files, or it does not run in this process).
    """
