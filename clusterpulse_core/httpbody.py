"""Bounded reads of HTTP response bodies, shared by every client that talks to a remote server.

A body is read in chunks **after** decompression (``Content-Encoding: gzip`` is decoded chunk by
chunk), so a hostile server cannot make the process hold more than ``max_bytes`` of it: a 1 MiB
gzip body that inflates to gigabytes fails at the cap instead (docs/security.md#registries).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

#: Bytes asked for per read (decoded bytes: urllib3 inflates at most about this much per call).
CHUNK = 1024 * 1024


class StreamedResponse(Protocol):
    """What a bounded read needs of a response: urllib3's ``HTTPResponse`` (also ``requests``' ``raw``)."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""

    def read(self, amt: int | None = None, decode_content: bool | None = None) -> bytes:
        """Up to ``amt`` bytes of the (decoded) body."""

    def close(self) -> None:
        """Drop the connection."""

    def release_conn(self) -> None:
        """Give the connection back to its pool."""


class BodyTooLargeError(Exception):
    """The body is larger than the cap; the message says by how much and what was read."""


def read_capped(response: StreamedResponse, max_bytes: int, what: str) -> bytes:
    """The decoded body, failing as soon as it exceeds ``max_bytes`` (0: no cap).

    A ``Content-Length`` over the cap fails before any read; otherwise the body is read in
    decoded chunks and the connection is dropped at the first byte past the cap.
    """
    try:
        length = int(response.headers.get("Content-Length") or -1)
    except ValueError:
        length = -1
    if max_bytes and length > max_bytes:
        response.close()
        raise BodyTooLargeError(f"{what}: response of {length} bytes is over the limit of {max_bytes}")
    buffer = bytearray()
    try:
        while True:
            chunk = response.read(min(CHUNK, max_bytes + 1 - len(buffer)) if max_bytes else CHUNK, decode_content=True)
            if not chunk:
                break
            buffer += chunk
            if max_bytes and len(buffer) > max_bytes:
                response.close()
                raise BodyTooLargeError(f"{what}: response over the limit of {max_bytes} bytes (read {len(buffer)})")
    finally:
        response.release_conn()
    return bytes(buffer)
