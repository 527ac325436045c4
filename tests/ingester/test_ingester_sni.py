"""The agent sends the dialled host as SNI and verifies the certificate against ``INGESTER_TLS_SERVER_NAME``
(docs/push-mode.md#tls-server-name), so it reaches the hub through a TLS-passthrough proxy routing on SNI.

A real HAProxy (Debian package ``haproxy``) in TCP mode routes on SNI to an ingester serving the hub's
own certificate (valid for the Service name only); the agent dials HAProxy as ``localhost``.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import grpc
import pytest
from clusterpulse_ingester.agent.sni import certificate_matches
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc
from clusterpulse_ingester.settings import IngesterSettings
from clusterpulse_testing.servers import haproxy_sni_process, require_binary
from clusterpulse_testing.tls import make_certificates
from push_support import SERVER_NAME, TOKEN, agent_register, hub_ca, ingester_port

from clusterpulse_core.context import Runtime

#: The host the agent dials (resolves to loopback): what a passthrough Route's host is.
ROUTE_HOST = "localhost"


@pytest.fixture
def passthrough(
    start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any, tmp_path: Path
) -> Iterator[tuple[int, Path]]:
    """An ingester with the hub's own certificate behind HAProxy routing SNI ``localhost`` to it:
    ``(HAProxy port, CA file)``."""
    runtime, _ = start_ingester(tls_enabled=None, tls_certificates="hub")
    ca = tmp_path / "ca.crt"
    ca.write_text(hub_ca(hub))
    proxy = haproxy_sni_process(
        require_binary("haproxy", "haproxy", ["/usr/sbin/haproxy"]), {ROUTE_HOST: ingester_port(runtime)}
    )
    proxy.start()
    try:
        yield proxy.port, ca
    finally:
        proxy.cleanup()


def test_the_agent_reaches_the_ingester_through_an_sni_passthrough(passthrough: tuple[int, Path]) -> None:
    port, ca = passthrough
    agent = IngesterSettings(ingester_address=f"{ROUTE_HOST}:{port}", tls_ca=str(ca), tls_server_name=SERVER_NAME)
    assert asyncio.run(agent_register(agent)).WhichOneof("payload") == "config"

    # Verification stays on: another CA, or a name the certificate does not hold, is refused.
    other_ca = make_certificates(ca.parent / "other", SERVER_NAME).ca_file
    for bad in (
        IngesterSettings(ingester_address=f"{ROUTE_HOST}:{port}", tls_ca=str(other_ca), tls_server_name=SERVER_NAME),
        IngesterSettings(
            ingester_address=f"{ROUTE_HOST}:{port}", tls_ca=str(ca), tls_server_name="someone-else.example"
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            asyncio.run(agent_register(bad))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_client_certificate_travels_through_the_sni_passthrough(
    start_ingester: Callable[..., tuple[Runtime, Any]], hub: Any, tmp_path: Path
) -> None:
    """mTLS through the passthrough: the agent's own TLS (SNI = the dialled host) presents its client certificate,
    the one the hub issues for the cluster (docs/push-mode.md#client-certificates); without it, it is refused."""
    runtime, _ = start_ingester(tls_enabled=None, tls_certificates="hub", require_client_certificates=True)
    issue = runtime.plugins.hook("clusterpulse_agent_certificate")  # declared by the ingester
    assert issue is not None
    issued = issue(cluster="edge", current=None)
    assert issued is not None
    cert, key, ca = tmp_path / "client.crt", tmp_path / "client.key", tmp_path / "ca.crt"
    cert.write_text(issued.cert_pem)
    key.write_text(issued.key_pem)
    ca.write_text(hub_ca(hub))
    proxy = haproxy_sni_process(
        require_binary("haproxy", "haproxy", ["/usr/sbin/haproxy"]), {ROUTE_HOST: ingester_port(runtime)}
    )
    proxy.start()
    try:
        agent = IngesterSettings(
            ingester_address=f"{ROUTE_HOST}:{proxy.port}", tls_ca=str(ca), tls_server_name=SERVER_NAME
        )
        with pytest.raises(grpc.aio.AioRpcError) as info:
            asyncio.run(agent_register(agent))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        with_certificate = attrs.evolve(agent, tls_client_cert=str(cert), tls_client_key=str(key))
        assert asyncio.run(agent_register(with_certificate)).WhichOneof("payload") == "config"
    finally:
        proxy.cleanup()


def test_with_grpcs_name_override_the_passthrough_is_not_reached(passthrough: tuple[int, Path]) -> None:
    """What the agent did before: the override sends the server name as SNI, HAProxy has no route for it."""
    port, ca = passthrough

    async def register() -> None:
        credentials = grpc.ssl_channel_credentials(ca.read_bytes())
        async with grpc.aio.secure_channel(
            f"{ROUTE_HOST}:{port}", credentials, options=[("grpc.ssl_target_name_override", SERVER_NAME)]
        ) as channel:
            call = pb_grpc.CollectorServiceStub(channel).Connect(timeout=10)
            await call.write(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token=TOKEN + "edge")))
            await call.read()

    with pytest.raises(grpc.aio.AioRpcError) as info:
        asyncio.run(register())
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


class SniRecorder:
    """A TLS server recording the SNI of every ClientHello (and completing no handshake that matters)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.seen: list[str | None] = []
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert), str(key))
        self.context.set_alpn_protocols(["h2"])
        self.context.sni_callback = lambda _sock, name, _ctx: self.seen.append(name)  # type: ignore[assignment,misc,return-value]
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            try:
                with self.context.wrap_socket(conn, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("option", ["grpc.ssl_target_name_override", "grpc.default_authority"])
def test_grpcio_options_that_change_the_verified_name_change_the_sni_too(option: str, tmp_path: Path) -> None:
    """Why the agent makes the TLS connection itself when a server name is set: grpcio has no public
    way to verify another name than the one it sends as SNI."""
    made = make_certificates(tmp_path, SERVER_NAME)
    recorder = SniRecorder(made.cert_file, made.key_file)
    try:
        channel = grpc.secure_channel(
            f"{ROUTE_HOST}:{recorder.port}",
            grpc.ssl_channel_credentials(made.ca_file.read_bytes()),
            options=[(option, SERVER_NAME)],
        )
        with pytest.raises(grpc.FutureTimeoutError):
            grpc.channel_ready_future(channel).result(timeout=2)  # the recorder completes no HTTP/2
        channel.close()
        assert recorder.seen and set(recorder.seen) == {SERVER_NAME}  # not the dialled host

        recorder.seen.clear()
        agent = IngesterSettings(
            ingester_address=f"{ROUTE_HOST}:{recorder.port}", tls_ca=str(made.ca_file), tls_server_name=SERVER_NAME
        )
        with pytest.raises(grpc.aio.AioRpcError):
            asyncio.run(agent_register(agent))
        assert recorder.seen and set(recorder.seen) == {ROUTE_HOST}  # the agent: the dialled host
    finally:
        recorder.close()


@pytest.mark.parametrize(
    ("names", "name", "matches"),
    [
        (["ingester.example.com"], "ingester.example.com", True),
        (["INGESTER.example.com"], "ingester.example.COM.", True),
        (["*.example.com"], "ingester.example.com", True),
        (["*.example.com"], "a.b.example.com", False),
        (["*.com"], "example.com", False),
        (["ingester.example.com"], "other.example.com", False),
        (["192.0.2.7"], "192.0.2.7", True),
        (["192.0.2.7"], "192.0.2.8", False),
        (["192.0.2.7"], "ingester.example.com", False),
    ],
)
def test_the_certificate_name_check(names: list[str], name: str, matches: bool, tmp_path: Path) -> None:
    import datetime as dt

    from clusterpulse_ingester.certs import new_ca, new_leaf

    now = dt.datetime.now(dt.UTC)
    ca = new_ca("test", now, dt.timedelta(days=2))
    leaf = new_leaf(ca, names, now, dt.timedelta(days=1))
    der = ssl.PEM_cert_to_DER_cert(leaf.cert_pem)
    assert certificate_matches(der, name) is matches


def test_the_haproxy_route_is_real(passthrough: tuple[int, Path]) -> None:
    """HAProxy closes a connection whose SNI has no route (so the passthrough test proves the SNI)."""
    port, ca = passthrough
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        pytest.raises((ssl.SSLError, OSError)),
        context.wrap_socket(raw, server_hostname="unrouted.example"),
    ):
        pass
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=ROUTE_HOST) as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
