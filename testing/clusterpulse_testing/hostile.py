"""A hostile HTTP server for fault tests: a proxy in front of an API server emulator that can
drip, stall, inflate or nest the answers of chosen paths.

Usage::

    with HostileProxy(upstream=api.url) as proxy:
        proxy.drip(r"^/api/v1/nodes", bytes_per_second=1)
        ...  # point a ClusterConnection's endpoint at proxy.url

Every other request is forwarded to ``upstream`` unchanged (an ``https://`` upstream is verified
against this process's loopback CA). The proxy serves HTTPS with that CA too unless ``tls=False``,
so a ClusterConnection pointed at it verifies TLS as against a real API server. Behaviours:

* ``drip``: answer 200 with headers at once, then the upstream body one byte at a time;
* ``stall_headers``: send the status line, then one header byte per second, never finishing;
* ``huge``: a syntactically valid ``List`` of ``size`` bytes (one big annotation per item);
* ``nested``: a JSON document nested ``depth`` levels deep;
* ``respond``: a fixed status, JSON body and extra headers (a stand-in for a simple endpoint, a
  redirect, a ``Link`` to elsewhere, a gzip bomb with ``Content-Encoding: gzip``).

Every request received is recorded in :attr:`HostileProxy.seen` (method, path, headers), so a test
can show what a client sent where (credentials included).
"""

from __future__ import annotations

import re
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Self

import urllib3

from clusterpulse_testing.tls import loopback_ca

HOST = "127.0.0.1"


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls is not None:
            # The handshake happens on the handler's thread (first read), never on the accept loop.
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


class HostileProxy:
    """The proxy; thread-safe behaviour table keyed by path regex (first match wins)."""

    def __init__(self, upstream: str, tls: bool = True) -> None:
        self.upstream = upstream.rstrip("/")
        self._lock = threading.Lock()
        self._rules: list[tuple[re.Pattern[str], str, dict[str, Any]]] = []
        certificates = loopback_ca()
        self._http = urllib3.PoolManager(
            maxsize=16, retries=False, timeout=urllib3.Timeout(total=30), ca_certs=str(certificates.ca_file)
        )
        self._stop = threading.Event()
        #: ``(method, path with query, headers)`` of every request received, in order.
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _Server((HOST, 0), Handler)
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(certificates.cert_file), str(certificates.key_file))
            self._server.tls = context
        self._thread = threading.Thread(target=self._server.serve_forever, name="hostile-proxy", daemon=True)

    @property
    def url(self) -> str:
        """``https://127.0.0.1:<port>`` (``http://`` with ``tls=False``)."""
        scheme = "https" if self._server.tls is not None else "http"
        return f"{scheme}://{HOST}:{self._server.server_address[1]}"

    @property
    def ca_pem(self) -> str:
        """The CA its certificate chains to (a credentials Secret's ``ca.crt``; empty without TLS)."""
        return loopback_ca().ca_pem if self._server.tls is not None else ""

    def start(self) -> Self:
        """Serve in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (dripping handlers end at their next byte)."""
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.stop()

    # ------------------------------------------------------------------ behaviours

    def _add(self, path_regex: str, mode: str, **options: Any) -> None:
        with self._lock:
            self._rules.append((re.compile(path_regex), mode, options))

    def drip(self, path_regex: str, bytes_per_second: float = 1.0) -> None:
        """Answer matching paths one byte at a time."""
        self._add(path_regex, "drip", rate=bytes_per_second)

    def stall_headers(self, path_regex: str) -> None:
        """Never finish the headers of matching paths (one byte a second)."""
        self._add(path_regex, "stall")

    def huge(self, path_regex: str, size: int, kind: str = "NodeList") -> None:
        """Answer matching paths with a valid list of about ``size`` bytes."""
        self._add(path_regex, "huge", size=size, kind=kind)

    def nested(self, path_regex: str, depth: int) -> None:
        """Answer matching paths with JSON nested ``depth`` levels deep."""
        self._add(path_regex, "nested", depth=depth)

    def respond(
        self, path_regex: str, status: int = 200, body: bytes = b"{}", headers: Mapping[str, str] | None = None
    ) -> None:
        """Answer matching paths with ``status``, ``body`` and ``headers`` at once."""
        self._add(path_regex, "respond", status=status, body=body, headers=dict(headers or {}))

    def clear(self) -> None:
        """Forward everything again."""
        with self._lock:
            self._rules.clear()

    # ------------------------------------------------------------------ serving

    def _rule(self, path: str) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            for pattern, mode, options in self._rules:
                if pattern.search(path):
                    return mode, options
        return None

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.seen.append((request.command, request.path, dict(request.headers.items())))
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        rule = self._rule(request.path.split("?", 1)[0])
        try:
            if rule is None:
                self._forward(request, body)
            elif rule[0] == "drip":
                status, data = self._fetch(request, body)
                self._send_head(request, status, len(data))
                self._drip(request, data, float(rule[1]["rate"]))
            elif rule[0] == "stall":
                request.wfile.write(b"HTTP/1.1 200 OK\r\n")
                request.wfile.flush()
                self._drip(request, b"X-Stall: " + b"x" * 100_000, 1.0)
            elif rule[0] == "huge":
                # No Content-Length: the body ends when the connection closes, as a hostile server may.
                request.send_response(200)
                request.send_header("Content-Type", "application/json")
                request.send_header("Connection", "close")
                request.end_headers()
                request.close_connection = True
                for chunk in _huge_list(int(rule[1]["size"]), str(rule[1]["kind"])):
                    request.wfile.write(chunk)
            elif rule[0] == "respond":
                data = bytes(rule[1]["body"])
                self._send_head(request, int(rule[1]["status"]), len(data), rule[1]["headers"])
                request.wfile.write(data)
            elif rule[0] == "nested":
                depth = int(rule[1]["depth"])
                data = b'{"items":' + b"[" * depth + b"]" * depth + b"}"
                self._send_head(request, 200, len(data))
                request.wfile.write(data)
        except (TimeoutError, BrokenPipeError, ConnectionResetError, OSError, ssl.SSLError):
            request.close_connection = True

    def _fetch(self, request: BaseHTTPRequestHandler, body: bytes | None) -> tuple[int, bytes]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        response = self._http.request(request.command, self.upstream + request.path, body=body, headers=headers)
        return response.status, response.data

    def _forward(self, request: BaseHTTPRequestHandler, body: bytes | None) -> None:
        status, data = self._fetch(request, body)
        self._send_head(request, status, len(data))
        request.wfile.write(data)

    @staticmethod
    def _send_head(
        request: BaseHTTPRequestHandler, status: int, length: int, headers: Mapping[str, str] | None = None
    ) -> None:
        request.send_response(status)
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(length))
        request.end_headers()
        request.wfile.flush()

    def _drip(self, request: BaseHTTPRequestHandler, data: bytes, rate: float) -> None:
        pause = 1.0 / rate if rate > 0 else 1.0
        for index in range(len(data)):
            if self._stop.is_set():
                return
            request.wfile.write(data[index : index + 1])
            request.wfile.flush()
            time.sleep(pause)


def _huge_list(size: int, kind: str) -> Iterator[bytes]:
    """A valid list of about ``size`` bytes: items with 1 MiB annotations, streamed in chunks."""
    annotation = b"a" * (1024 * 1024)
    yield b'{"kind":"' + kind.encode() + b'","apiVersion":"v1","metadata":{},"items":['
    written, index = 0, 0
    while written < size:
        item = b'{"metadata":{"name":"n' + str(index).encode() + b'","annotations":{"big":"' + annotation + b'"}}}'
        yield (b"," if index else b"") + item
        written += len(item) + 1
        index += 1
    yield b"]}"
