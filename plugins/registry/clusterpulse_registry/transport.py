"""Readable texts for failed HTTP requests (what ``request failed: <err>`` carries)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import requests


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: urllib3's ``reason``, exception arguments, ``__cause__``/``__context__``."""
    seen: set[int] = set()
    todo = [exc]
    while todo and len(seen) < 20:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        reason = getattr(current, "reason", None)
        nested = [reason, *current.args, current.__cause__, current.__context__]
        todo.extend(item for item in nested if isinstance(item, BaseException))


def failure_kind(exc: BaseException) -> str:
    """``tls``, ``timeout``, ``refused``, ``dns`` or ``other``: what a person should look at."""
    causes = list(_causes(exc))
    if any(isinstance(c, ssl.SSLError | requests.exceptions.SSLError) for c in causes):
        return "tls"
    if any(isinstance(c, requests.exceptions.Timeout | TimeoutError) for c in causes):
        return "timeout"
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return "refused"
    if any("Name or service not known" in str(c) or "nodename nor servname" in str(c) for c in causes):
        return "dns"
    return "other"


def describe_failure(exc: BaseException, url: str, timeout: float | None = None) -> str:
    """``Get "<url>": <short reason>``, e.g. ``connection refused`` or ``tls: certificate verify failed``."""
    causes = list(_causes(exc))
    kind = failure_kind(exc)
    detail = str(exc)
    if kind == "tls":
        verify = next((c for c in causes if isinstance(c, ssl.SSLCertVerificationError)), None)
        if verify is not None:
            detail = f"tls: certificate verify failed: {verify.verify_message}"
        else:
            ssl_error = next((c for c in causes if isinstance(c, ssl.SSLError)), None)
            detail = f"tls: {ssl_error.reason or ssl_error}" if ssl_error is not None else "tls: handshake failed"
    elif kind == "timeout":
        detail = f"timeout after {timeout:g}s" if timeout else "timeout"
    elif kind == "refused":
        detail = "connection refused"
    else:
        oserror = next((c for c in reversed(causes) if isinstance(c, OSError) and c.strerror), None)
        if oserror is not None:
            detail = str(oserror.strerror).lower()
    return f'Get "{url}": {detail}'
