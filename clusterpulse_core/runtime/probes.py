"""The manager's HTTP endpoints: ``/healthz``, ``/readyz`` and ``/metrics``.

Each endpoint is a function returning a :class:`Reply`; a :class:`ProbeServer` serves a set of
them on one address in a background thread. Addresses use the controller-runtime flag form:
``":8080"`` (all interfaces), ``"127.0.0.1:0"`` (a free port), ``"0"`` or ``""`` (disabled).

The server is bounded before anything is parsed: at most ``max_connections`` connections are
served at once (one more is answered ``503`` and closed at once, without a thread), and each
connection is cut when its one request has not been answered within ``request_timeout`` seconds,
however slowly the client trickles bytes (docs/security.md#the-probe-and-metrics-server).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import attrs
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

TEXT = "text/plain; charset=utf-8"
#: Defaults of the bounds (the manager passes ``probe_request_timeout`` and ``probe_max_connections``).
DEFAULT_REQUEST_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 16
_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@attrs.frozen
class Reply:
    """One HTTP answer."""

    status: int
    body: bytes
    content_type: str = TEXT


Endpoint = Callable[[], Reply]


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``":8080"`` -> ``("", 8080)``, ``"[::1]:0"`` -> ``("::1", 0)``; ``"0"``/``""`` -> None (disabled)."""
    text = address.strip()
    if text in ("", "0"):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address must look like ':8080' or 'HOST:PORT', got {address!r}")
    return host.strip("[]"), int(port)


def health_reply(running: Callable[[], bool]) -> Endpoint:
    """``/healthz``: 200 ``ok`` while the manager runs, else 503."""

    def endpoint() -> Reply:
        return Reply(200, b"ok") if running() else Reply(503, b"stopping")

    return endpoint


def ready_reply(problems: Callable[[], list[str]]) -> Endpoint:
    """``/readyz``: 200 ``ok`` when ``problems()`` is empty, else 503 listing them one per line."""

    def endpoint() -> Reply:
        found = problems()
        if not found:
            return Reply(200, b"ok")
        return Reply(503, ("\n".join(found) + "\n").encode())

    return endpoint


def metrics_reply(registry: CollectorRegistry) -> Endpoint:
    """``/metrics``: the Prometheus text exposition of ``registry``."""

    def endpoint() -> Reply:
        return Reply(200, generate_latest(registry), CONTENT_TYPE_LATEST)

    return endpoint


class ProbeServer:
    """Serves ``routes`` (path -> endpoint) on one address until :meth:`stop`.

    ``request_timeout`` bounds each connection from accept to close; ``max_connections`` bounds
    the connections (and so the threads) served at once.
    """

    def __init__(
        self,
        name: str,
        address: tuple[str, int],
        routes: Mapping[str, Endpoint],
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        self.name = name
        self.routes = dict(routes)
        handler = _handler_for(self.routes, request_timeout)
        self._server = _BoundedHTTPServer(address, handler, request_timeout, max_connections)
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"http-{name}", daemon=True)

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Start serving in the background."""
        self._thread.start()
        log.info("%s endpoints listening on port %d: %s", self.name, self.port, ", ".join(self.routes))

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(5.0)
        self._server.server_close()


class _BoundedHTTPServer(HTTPServer):
    """One thread per connection, at most ``max_connections`` of them, each cut at its deadline."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        request_timeout: float,
        max_connections: int,
    ) -> None:
        self.request_timeout = request_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.debug("probe server busy: refusing a connection from %s", client_address)
            try:
                request.settimeout(0)
                request.send(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            threading.Thread(
                target=self._serve, args=(request, client_address), daemon=True, name="http-probe-request"
            ).start()
        except RuntimeError:
            self._slots.release()
            self.shutdown_request(request)

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        # The socket timeout bounds each read; the timer bounds the whole connection, so a client
        # sending one byte just before each read times out is still cut.
        deadline = threading.Timer(self.request_timeout, _cut, args=(request,))
        deadline.daemon = True
        deadline.start()
        try:
            self.finish_request(request, client_address)
        except Exception:
            log.debug("probe request from %s failed", client_address, exc_info=True)
        finally:
            deadline.cancel()
            self.shutdown_request(request)
            self._slots.release()


def _cut(request: socket.socket) -> None:
    try:
        request.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def _handler_for(routes: Mapping[str, Endpoint], request_timeout: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """Serves the routes' endpoints for GET; anything else is 404."""

        timeout = request_timeout  # each socket read (StreamRequestHandler sets it)

        def do_GET(self) -> None:
            endpoint = routes.get(self.path.split("?", 1)[0])
            try:
                reply = endpoint() if endpoint is not None else Reply(404, b"not found\n")
            except Exception as exc:
                log.exception("probe %s failed", self.path)
                reply = Reply(500, f"{type(exc).__name__}: {exc}\n".encode())
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("probe request: " + format, *args)

    return Handler
