"""One import request to VictoriaMetrics: ``POST <endpoint>/api/v1/import/prometheus``."""

from __future__ import annotations

import zlib

import urllib3

from clusterpulse_core import deadline as core_deadline
from clusterpulse_core.config import mask_url
from clusterpulse_vmwriter.settings import VMSettings

#: Client errors that no retry can fix (the body itself is refused); others are retried.
_PERMANENT_STATUSES = frozenset({400, 413, 415, 422})


class DeliveryError(Exception):
    """An import request failed; ``retryable`` says whether sending it again can succeed."""

    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def gzip_body(body: bytes) -> bytes:
    """``body`` as a gzip stream (level 1: text compresses well even at the fastest level)."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    return compressor.compress(body) + compressor.flush()


class ImportClient:
    """Sends Prometheus-text bodies to one VictoriaMetrics, with auth and optional gzip."""

    def __init__(self, settings: VMSettings) -> None:
        self.url = settings.import_url
        self._shown = mask_url(self.url)  # for messages: never a password from the URL
        self.compress_above = settings.compress_above
        self.timeout = settings.timeout
        self._pool = core_deadline.watch_pool(
            urllib3.PoolManager(num_pools=1, maxsize=1, retries=False, timeout=urllib3.Timeout(total=settings.timeout))
        )
        self._headers = {"Content-Type": "text/plain"}
        password, token = settings.basic_password(), settings.token()
        if settings.username or password:
            basic = urllib3.make_headers(basic_auth=f"{settings.username}:{password}")
            self._headers["Authorization"] = basic["authorization"]
        elif token:
            self._headers["Authorization"] = f"Bearer {token}"

    def post(self, body: bytes) -> None:
        """Send one body; raise :class:`DeliveryError` unless VictoriaMetrics answered 2xx."""
        headers = dict(self._headers)
        if len(body) > self.compress_above:
            body = gzip_body(body)
            headers["Content-Encoding"] = "gzip"
        try:
            with core_deadline.guard(self.timeout, f"POST {self._shown}"):
                response = self._pool.request(
                    "POST", self.url, body=body, headers=headers, preload_content=True, redirect=False
                )
        except core_deadline.DeadlineExceeded as exc:
            raise DeliveryError(str(exc), retryable=True) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise DeliveryError(f"POST {self._shown}: {exc}", retryable=True) from exc
        if response.status >= 300:
            detail = response.data[:200].decode(errors="replace").strip()
            raise DeliveryError(
                f"POST {self._shown}: HTTP {response.status} {detail}",
                retryable=response.status not in _PERMANENT_STATUSES,
            )

    def close(self) -> None:
        """Close the connection pool."""
        self._pool.clear()
