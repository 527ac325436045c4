"""Collector tokens minted by the hub (docs/push-mode.md#collector-tokens), one per push-mode cluster.

The hub keeps each cluster's token in a Secret it owns in its namespace,
``clusterpulse-collector-<cluster>``: key ``token`` is the current token and, after a rotation,
``previous-token`` is still accepted until ``previous-valid-until`` (RFC 3339). The cluster plugin
creates the Secret and copies ``token`` to the managed cluster; the ingester accepts what the
Secret accepts now; ``clusterpulse agent rotate-token`` rotates it. The hub's own credential
(the ClusterConnection's ``credentialsRef``) never leaves the hub.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError, hub_unreachable
from clusterpulse_core.kube.credentials import SecretCache, decode_secret_data

TOKEN_KEY = "token"
PREVIOUS_KEY = "previous-token"
PREVIOUS_UNTIL_KEY = "previous-valid-until"
PREFIX = "clusterpulse-collector-"
#: Label marking the hub Secrets that hold collector tokens.
LABEL = "clusterpulse.io/collector-token"
#: ``collector_token_source`` values: minted by the hub, or the Go hub's behaviour (the hub's own credential).
HUB, CREDENTIALS = "hub", "credentials"
#: Random bytes of a token (256 bits).
TOKEN_BYTES = 32
_MAX_NAME = 253


def secret_name(cluster: str) -> str:
    """The hub Secret of ``cluster``'s collector token (a hash keeps a long name within 253 characters)."""
    name = PREFIX + cluster
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:16]
    return f"{name[: _MAX_NAME - 17].rstrip('-.')}-{digest}"


def mint() -> str:
    """A new random token (256 bits, URL-safe text)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def accepted(data: Mapping[str, str], now: datetime) -> list[str]:
    """The tokens the Secret's data accepts at ``now``: the current one, and the previous one in its grace."""
    tokens = [data[TOKEN_KEY]] if data.get(TOKEN_KEY) else []
    previous, until = data.get(PREVIOUS_KEY, ""), data.get(PREVIOUS_UNTIL_KEY, "")
    if previous and until:
        try:
            if now < datetime.fromisoformat(until.replace("Z", "+00:00")):
                tokens.append(previous)
        except ValueError:
            pass
    return tokens


def grace_ends(data: Mapping[str, str]) -> datetime | None:
    """When the previous token stops being accepted, if there is one."""
    until = data.get(PREVIOUS_UNTIL_KEY, "")
    if not data.get(PREVIOUS_KEY) or not until:
        return None
    try:
        return datetime.fromisoformat(until.replace("Z", "+00:00"))
    except ValueError:
        return None


def _path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/secrets" + (f"/{name}" if name else "")


def _encode(data: Mapping[str, str]) -> dict[str, str]:
    return {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}


def secret_object(
    namespace: str, cluster: str, data: Mapping[str, str], owner: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The hub Secret; ``owner`` (the cluster's object, as the hub returned it) makes Kubernetes delete it
    with its cluster."""
    meta: dict[str, Any] = {
        "name": secret_name(cluster),
        "namespace": namespace,
        "labels": {"app.kubernetes.io/part-of": "clusterpulse", LABEL: "true"},
    }
    owner_meta = (owner or {}).get("metadata") or {}
    if owner is not None and owner.get("apiVersion") and owner.get("kind") and owner_meta.get("uid"):
        meta["ownerReferences"] = [
            {
                "apiVersion": str(owner["apiVersion"]),
                "kind": str(owner["kind"]),
                "name": str(owner_meta.get("name") or cluster),
                "uid": str(owner_meta["uid"]),
            }
        ]
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta, "data": _encode(data)}


def ensure(
    hub: KubeClient,
    namespace: str,
    cluster: str,
    owner: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    cache: SecretCache | None = None,
) -> str:
    """The current token of ``cluster``, minting it (and creating the Secret) when there is none.

    A deleted Secret is created again with a new token: deleting it rotates without grace. A Secret
    without a token is an error (delete it to have a new one minted). With ``cache``, a hub that
    cannot be reached gets the last good read (a hub outage must not stop a push cluster's reconcile).
    """
    name = secret_name(cluster)
    try:
        found = hub.get(_path(namespace, name), timeout=timeout)
    except NotFoundError:
        token = mint()
        hub.request(
            "POST", _path(namespace), body=secret_object(namespace, cluster, {TOKEN_KEY: token}, owner), timeout=timeout
        )
        if cache is not None:
            cache.put(namespace, name, {TOKEN_KEY: token})
        return token
    except KubeApiError as exc:
        cached = cache.fallback(namespace, name, exc) if cache is not None and hub_unreachable(exc) else None
        if cached is None or not cached.get(TOKEN_KEY):
            raise
        return cached[TOKEN_KEY]
    data = decode_secret_data(found)
    if cache is not None:
        cache.put(namespace, name, data)
    token = data.get(TOKEN_KEY, "")
    if not token:
        raise KubeApiError(0, f'no key "{TOKEN_KEY}" (delete the Secret to mint a new token)')
    return token


def rotate(
    hub: KubeClient, namespace: str, cluster: str, grace: timedelta, now: datetime, timeout: float | None = None
) -> datetime:
    """Replace the token of ``cluster``; the old one is accepted until the returned time."""
    found = hub.get(_path(namespace, secret_name(cluster)), timeout=timeout)
    data = decode_secret_data(found)
    until = now + grace
    new = {TOKEN_KEY: mint()}
    if data.get(TOKEN_KEY):
        new.update({PREVIOUS_KEY: data[TOKEN_KEY], PREVIOUS_UNTIL_KEY: until.strftime("%Y-%m-%dT%H:%M:%SZ")})
    body = dict(found)
    body["data"] = _encode(new)
    body.pop("stringData", None)
    hub.request("PUT", _path(namespace, secret_name(cluster)), body=body, timeout=timeout)
    return until
