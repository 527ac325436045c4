"""The manager's HTTP endpoints: ``/healthz``, ``/readyz`` and ``/metrics``.

Each endpoint is a function returning a :class:`Reply`; a :class:`ProbeServer` serves a set of
them on one address in a background thread. Addresses use the controller-runtime flag form:
``":8080"`` (all interfaces), ``"127.0.0.1:0"`` (a free port), ``"0"`` or ``""`` (disabled).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

TEXT = "text/plain; charset=utf-8"


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
    """Serves ``routes`` (path -> endpoint) on one address until :meth:`stop`."""

    def __init__(self, name: str, address: tuple[str, int], routes: Mapping[str, Endpoint]) -> None:
        self.name = name
        self.routes = dict(routes)
        handler = _handler_for(self.routes)
        self._server = ThreadingHTTPServer(address, handler)
        self._server.daemon_threads = True
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


def _handler_for(routes: Mapping[str, Endpoint]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """Serves the routes' endpoints for GET; anything else is 404."""

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
