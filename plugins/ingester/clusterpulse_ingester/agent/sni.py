"""TLS to the ingester as the Go agent does it: SNI is the dialled host, the certificate is verified
against ``INGESTER_TLS_SERVER_NAME`` (docs/push-mode.md#tls-server-name).

That is what lets an agent reach the hub through a TLS-passthrough proxy that routes on SNI (an
OpenShift passthrough Route, HAProxy in TCP mode) while the certificate names the ingester Service.
grpcio offers no public way to do it: ``grpc.ssl_channel_credentials`` takes only roots and a key
pair, and both channel options that change the verified name, ``grpc.ssl_target_name_override`` and
``grpc.default_authority``, change the SNI as well (tests/ingester/test_ingester_sni.py shows it).

So when the server name differs from the dialled host the agent makes the TLS connection itself
with Python's :mod:`ssl`: SNI = the dialled host, TLS 1.2 at least, ALPN ``h2``, the chain verified
against ``INGESTER_TLS_CA`` (else the system roots) and the leaf's subject alternative names matched
against the server name. gRPC speaks HTTP/2 through that connection over a Unix socket in a
directory only this process can enter; nothing listens on the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import ssl
import tempfile
from collections.abc import AsyncIterator

from cryptography import x509

log = logging.getLogger(__name__)

#: Bytes read at a time from either side of the relay.
CHUNK = 64 * 1024


class NameMismatchError(ssl.SSLError):
    """The ingester's certificate is not valid for the expected server name."""


def certificate_matches(der: bytes, name: str) -> bool:
    """Whether the certificate's subject alternative names cover ``name`` (RFC 6125: exact, or a
    wildcard as the whole left-most label; an IP address only against an IP entry; the common name
    is not used, as in Go)."""
    cert = x509.load_der_x509_certificate(der)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = None
    if address is not None:
        return address in san.get_values_for_type(x509.IPAddress)
    wanted = name.rstrip(".").lower().split(".")
    for entry in san.get_values_for_type(x509.DNSName):
        labels = entry.rstrip(".").lower().split(".")
        if len(labels) != len(wanted):
            continue
        if labels == wanted or (labels[0] == "*" and len(labels) > 2 and labels[1:] == wanted[1:]):
            return True
    return False


def client_context(ca_file: str, cert_file: str = "", key_file: str = "") -> ssl.SSLContext:
    """TLS 1.2+, ALPN ``h2``, the chain verified against ``ca_file`` (else the system roots); the name
    is checked by :func:`certificate_matches` instead of against the SNI. With ``cert_file`` the agent
    presents that client certificate (mTLS)."""
    context = ssl.create_default_context(cafile=ca_file or None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file or None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    return context


class SniRelay:
    """A Unix socket whose every connection is relayed to ``host:port`` over verified TLS."""

    def __init__(self, host: str, port: int, server_name: str, context: ssl.SSLContext, connect_timeout: float) -> None:
        self.host, self.port, self.server_name = host, port, server_name
        self.context = context
        self.connect_timeout = connect_timeout
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self.path = ""

    async def start(self) -> str:
        """Listen; returns the gRPC target (``unix:<path>``)."""
        self._directory = tempfile.TemporaryDirectory(prefix="clusterpulse-agent-")
        os.chmod(self._directory.name, 0o700)
        self.path = os.path.join(self._directory.name, "ingester.sock")
        self._server = await asyncio.start_unix_server(self._serve, path=self.path)
        return f"unix:{self.path}"

    async def close(self) -> None:
        """Stop listening and end every relayed connection."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None

    async def _serve(self, local_reader: asyncio.StreamReader, local_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        remote_writer: asyncio.StreamWriter | None = None
        try:
            try:
                remote_reader, remote = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port, ssl=self.context, server_hostname=self.host),
                    self.connect_timeout,
                )
                remote_writer = remote
                tls = remote.get_extra_info("ssl_object")
                der = tls.getpeercert(binary_form=True) if tls is not None else None
                if not der or not certificate_matches(der, self.server_name):
                    raise NameMismatchError(
                        f"the certificate of {self.host}:{self.port} is not valid for "
                        f"INGESTER_TLS_SERVER_NAME {self.server_name}"
                    )
            except (OSError, TimeoutError) as exc:
                # gRPC only sees the connection close: the reason is here.
                log.warning(
                    "TLS to the ingester %s:%d (SNI %s, certificate verified for %s) failed: %s",
                    self.host,
                    self.port,
                    self.host,
                    self.server_name,
                    exc or type(exc).__name__,
                )
                return
            with contextlib.suppress(OSError):
                await asyncio.gather(_pump(local_reader, remote), _pump(remote_reader, local_writer))
        except asyncio.CancelledError:
            pass
        finally:
            for writer in (local_writer, remote_writer):
                if writer is not None:
                    writer.close()
            self._tasks.discard(task)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    finally:
        if writer.can_write_eof():
            with contextlib.suppress(OSError):
                writer.write_eof()


@contextlib.asynccontextmanager
async def relay(
    host: str,
    port: int,
    server_name: str,
    ca_file: str,
    connect_timeout: float,
    cert_file: str = "",
    key_file: str = "",
) -> AsyncIterator[str]:
    """A running :class:`SniRelay`: yields the gRPC target to dial."""
    running = SniRelay(host, port, server_name, client_context(ca_file, cert_file, key_file), connect_timeout)
    target = await running.start()
    try:
        yield target
    finally:
        await running.close()
