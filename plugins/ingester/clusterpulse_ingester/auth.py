"""Collector authentication (DECISIONS C4): the agent's bearer token against its cluster's token Secret."""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable

import attrs

from clusterpulse_core.kube.client import KubeClient, NotFoundError
from clusterpulse_core.kube.credentials import CredentialsError, read_secret
from clusterpulse_core.model import AgentStatus
from clusterpulse_ingester.agents import hub_view

CLUSTER_CONNECTION_PATH = "/apis/clusterpulse.io/v1alpha1/namespaces/{namespace}/clusterconnections/{name}"
#: A ClusterConnection name (DNS-1123 subdomain): anything else cannot be a cluster we know.
_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class AuthError(Exception):
    """The stream is refused; ``reason`` is a short label for metrics, the message is for the agent."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The token of an ``authorization: Bearer <token>`` metadata entry, or ``""``."""
    for key, value in metadata or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


def valid_cluster_name(name: str) -> bool:
    """Whether ``name`` can name a ClusterConnection (and so a Redis key)."""
    return bool(_CLUSTER_NAME.match(name))


@attrs.frozen
class KnownCluster:
    """What registering needs from the hub: the collector token and the hub's ``status.agent`` decision."""

    token: str
    #: ``None`` for a pull cluster (see :func:`clusterpulse_ingester.agents.hub_view`).
    agent: AgentStatus | None = None
    #: The ClusterConnection's ``spec.endpoint`` (stored as ``api_url`` when the agent sends none).
    endpoint: str = ""


def expected_token(hub: KubeClient, namespace: str, cluster: str) -> KnownCluster:
    """The collector token of ``cluster`` (key ``token`` of its ClusterConnection's credentials Secret).

    The same read of the ClusterConnection gives what its status says about the agent.
    """
    if not valid_cluster_name(cluster):
        raise AuthError("invalid_name", f"cluster name {cluster[:80]!r} is not a valid ClusterConnection name")
    try:
        obj = hub.get(CLUSTER_CONNECTION_PATH.format(namespace=namespace, name=cluster))
    except NotFoundError as exc:
        raise AuthError("unknown_cluster", f"unknown cluster {cluster!r}: no ClusterConnection "
                                           f"{namespace}/{cluster}") from exc
    spec = obj.get("spec") if isinstance(obj, dict) else None
    ref = (spec or {}).get("credentialsRef") or {}
    secret_ns = str(ref.get("namespace") or namespace)
    try:
        token = read_secret(hub, secret_ns, str(ref.get("name") or "")).get("token", "")
    except CredentialsError as exc:
        raise AuthError("no_token", f"cluster {cluster!r}: collector token unavailable: {exc}") from exc
    if not token:
        raise AuthError("no_token", f"cluster {cluster!r}: its credentials Secret has no token")
    endpoint = (spec or {}).get("endpoint")
    return KnownCluster(token, hub_view(obj if isinstance(obj, dict) else {}),
                        endpoint if isinstance(endpoint, str) else "")


def check_tokens(expected: str, register_token: str, metadata_token: str) -> None:
    """Both presented tokens (where present, at least one) must equal ``expected``, compared in constant time."""
    presented = [t for t in (register_token, metadata_token) if t]
    if not presented:
        raise AuthError("missing_token", "missing collector token")
    ok = True
    for token in presented:
        ok &= hmac.compare_digest(token.encode(), expected.encode())
    if not ok:
        raise AuthError("bad_token", "invalid collector token")
