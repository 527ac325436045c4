"""Registry URLs and the Basic authorization header (docs/compatibility.md#registry-checks)."""

from __future__ import annotations

import base64


def normalise_endpoint(endpoint: str, insecure: bool = False) -> str:
    """The registry base URL: a scheme added when missing, one trailing ``/`` removed.

    Without a scheme, ``https://`` is assumed, or ``http://`` when the registry is declared
    ``insecure`` (plain HTTP, docs/compatibility.md#c9). An explicit scheme is always kept.
    """
    if not endpoint.startswith(("http://", "https://")):
        endpoint = ("http://" if insecure else "https://") + endpoint
    return endpoint.removesuffix("/")


def catalog_url(base_url: str, max_entries: int) -> str:
    """``<base>/v2/_catalog``, with ``?n=<max_entries>`` when it is positive."""
    url = f"{base_url}/v2/_catalog"
    return f"{url}?n={max_entries}" if max_entries > 0 else url


def basic_auth_header(username: str, password: str) -> str | None:
    """``Basic base64(user:pass)``, or ``None`` unless both parts are non-empty."""
    if not username or not password:
        return None
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
