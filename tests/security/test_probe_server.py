"""The probe/metrics HTTP server against slow-loris clients on loopback: bounded connections, bounded time."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from clusterpulse_testing.polling import eventually

from clusterpulse_core.runtime.probes import ProbeServer, Reply

#: The bounds under test; every wait below is a multiple of REQUEST_TIMEOUT.
REQUEST_TIMEOUT = 1.0
MAX_CONNECTIONS = 3


@pytest.fixture
def server() -> Iterator[ProbeServer]:
    probe = ProbeServer(
        "health",
        ("127.0.0.1", 0),
        {"/healthz": lambda: Reply(200, b"ok")},
        request_timeout=REQUEST_TIMEOUT,
        max_connections=MAX_CONNECTIONS,
    )
    probe.start()
    yield probe
    probe.stop()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10 * REQUEST_TIMEOUT)


def _half_open(port: int) -> socket.socket:
    """A client that sends the start of a request and nothing more."""
    sock = _connect(port)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


def _get(port: int) -> bytes:
    with _connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        return _read_all(sock)


def test_half_open_requests_do_not_hold_the_server(server: ProbeServer) -> None:
    slow = [_half_open(server.port) for _ in range(MAX_CONNECTIONS)]
    try:
        # The pool is full: one more connection is answered 503 at once, without waiting for a slot.
        busy = eventually(
            lambda: (reply := _get(server.port)).startswith(b"HTTP/1.0 503") and reply,
            "a 503 while every slot is held",
            timeout=10 * REQUEST_TIMEOUT,
        )
        assert b"Connection: close" in busy
        # Each half-open client is cut at the request timeout (recv returns end of stream, no timeout).
        for sock in slow:
            assert sock.recv(4096) == b""
    finally:
        for sock in slow:
            sock.close()
    assert eventually(
        lambda: _get(server.port).startswith(b"HTTP/1.0 200"), "served again", timeout=10 * REQUEST_TIMEOUT
    )


def test_a_client_trickling_bytes_is_cut_at_the_request_timeout(server: ProbeServer) -> None:
    # One header byte every quarter of the timeout: every read of the server succeeds, the request
    # never ends. Without a deadline on the whole connection this client would be served for ever.
    drips = 0
    closed = False
    with _half_open(server.port) as sock:
        sock.settimeout(REQUEST_TIMEOUT / 4)
        while drips < 40 and not closed:  # 40 drips: ten request timeouts
            try:
                sock.sendall(b"X")
                drips += 1
                closed = sock.recv(4096) == b""
            except TimeoutError:
                continue  # nothing yet: drip again
            except OSError:
                closed = True  # reset by the server
    assert closed, f"the server still held the connection after {drips} drips ({drips / 4:g} request timeouts)"
