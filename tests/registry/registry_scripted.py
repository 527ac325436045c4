"""A registry that answers from a script (the redis example's ``registry`` map), reached through a proxy.

The golden example names ``https://registry.example.com``; the test keeps that endpoint and
routes it to 127.0.0.1 through an HTTP CONNECT proxy (``HTTPS_PROXY``), with a certificate
for that name from the test CA (``REQUESTS_CA_BUNDLE``). The client code runs unchanged.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from clusterpulse_testing.servers import free_port


class ScriptedRegistry:
    """Server answering ``"GET /path?query"`` keys with ``{status, headers, body, elapsed_ms}``.

    HTTPS with ``cert`` and ``key``, plain HTTP without.
    """

    def __init__(self, script: dict[str, dict[str, Any]], cert: Path | None = None, key: Path | None = None) -> None:
        self.script = script
        self.seen: list[str] = []
        self.port = free_port()
        registry = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                registry.answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        if cert is not None and key is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(cert), str(key))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        """Reply as the script says for this request line, 404 when it says nothing."""
        key = f"{request.command} {request.path}"
        self.seen.append(key)
        entry = self.script.get(key, {"status": 404, "body": {"errors": [{"code": "NOT_FOUND"}]}})
        time.sleep(entry.get("elapsed_ms", 0) / 1000)
        body = json.dumps(entry.get("body", {})).encode()
        request.send_response(entry["status"])
        for name, value in entry.get("headers", {}).items():
            request.send_header(name, value)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (plain HTTP servers)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedRegistry:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


class ConnectProxy:
    """An HTTP CONNECT proxy that tunnels every connection to ``127.0.0.1:<target_port>``."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.tunnels: list[str] = []
        self.port = free_port()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy.tunnel(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` for ``HTTPS_PROXY``."""
        return f"http://127.0.0.1:{self.port}"

    def tunnel(self, client: socket.socket) -> None:
        """Read the CONNECT request, then copy bytes both ways until one side closes (bounded by timeouts)."""
        client.settimeout(10)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        request_line = head.split(b"\r\n", 1)[0].decode()
        method, target, _ = request_line.split(" ", 2)
        if method != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        self.tunnels.append(target)
        with socket.create_connection(("127.0.0.1", self.target_port), timeout=10) as upstream:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            sockets = [client, upstream]
            for _ in range(100_000):
                readable, _, _ = select.select(sockets, [], [], 10)
                if not readable:
                    return
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is client else client).sendall(data)

    def start(self) -> ConnectProxy:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
