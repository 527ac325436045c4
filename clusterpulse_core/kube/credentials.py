"""Reading the Secrets that resources reference (cluster tokens, registry passwords)."""

from __future__ import annotations

import base64
from collections.abc import Mapping

import attrs

from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError


class CredentialsError(Exception):
    """A referenced Secret is missing, unreadable or lacks a required key; names the Secret."""


@attrs.frozen
class ClusterCredentials:
    """How to reach a managed cluster: endpoint, bearer token and optional CA bundle."""

    endpoint: str
    token: str
    ca_pem: str = ""


def read_secret(hub: KubeClient, namespace: str, name: str) -> dict[str, str]:
    """The Secret's ``data`` decoded from base64 (and ``stringData`` if present) as text."""
    try:
        secret = hub.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
    except NotFoundError as exc:
        raise CredentialsError(f"failed to get secret: secret {namespace}/{name} not found") from exc
    except KubeApiError as exc:
        raise CredentialsError(f"failed to get secret: secret {namespace}/{name}: {exc}") from exc
    return decode_secret_data(secret)


def decode_secret_data(secret: Mapping[str, object]) -> dict[str, str]:
    """Decode a Secret object's ``data`` (base64) merged with ``stringData`` (plain)."""
    out: dict[str, str] = {}
    for key, value in dict(secret.get("data") or {}).items():  # type: ignore[call-overload]
        try:
            out[key] = base64.b64decode(str(value)).decode()
        except (ValueError, UnicodeDecodeError):
            out[key] = ""
    for key, value in dict(secret.get("stringData") or {}).items():  # type: ignore[call-overload]
        out[key] = str(value)
    return out


def cluster_credentials(hub: KubeClient, endpoint: str, namespace: str, name: str) -> ClusterCredentials:
    """Token (required, key ``token``) and CA (optional, key ``ca.crt``) from a Secret."""
    data = read_secret(hub, namespace, name)
    token = data.get("token", "")
    if not token:
        raise CredentialsError(f"no token found in secret {namespace}/{name}")
    return ClusterCredentials(endpoint=endpoint, token=token, ca_pem=data.get("ca.crt", ""))
