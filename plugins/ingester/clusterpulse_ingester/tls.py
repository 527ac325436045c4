"""What the ingester serves TLS with (docs/push-mode.md#tls): your own files, or the hub's certificates.

With the hub's certificates (:mod:`clusterpulse_ingester.certs`) a thread checks every
``tls_renew_check_interval`` seconds whether something is due and renews it; the gRPC server takes
the new certificate on the next handshake (``grpc.dynamic_ssl_server_credentials``), so renewing
needs no restart and open streams are not cut.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import attrs
import grpc

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_ingester.certs import CertificateError, CertificateKeeper, KeyPair, ServerMaterial, service_names
from clusterpulse_ingester.settings import IngesterSettings

log = logging.getLogger(__name__)

FILES, HUB, AUTO = "files", "hub", "auto"


def certificate_source(settings: IngesterSettings) -> str:
    """``files`` or ``hub``: ``auto`` is ``files`` when ``INGESTER_TLS_CERT`` exists."""
    if settings.tls_certificates != AUTO:
        return settings.tls_certificates
    return FILES if Path(settings.tls_cert).exists() else HUB


class ServingCertificates:
    """The ingester's certificate and key, kept current; :meth:`credentials` for the gRPC server."""

    def __init__(
        self,
        settings: IngesterSettings,
        hub: KubeClient,
        namespace: str,
        clock: Callable[[], dt.datetime],
        on_bundle_change: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        #: Called (renewal thread) when the CA bundle agents trust changed (a renewed or rotated CA).
        self.on_bundle_change = on_bundle_change
        self.source = certificate_source(settings)
        self.keeper: CertificateKeeper | None = None
        if self.source == HUB:
            names = [*service_names(settings.service_name, namespace), *settings.tls_server_names]
            configmap = (settings.ca_configmap_namespace or namespace, settings.ca_configmap, settings.ca_configmap_key)
            self.keeper = CertificateKeeper(
                hub,
                namespace,
                names,
                dt.timedelta(days=settings.tls_ca_lifetime_days),
                dt.timedelta(days=settings.tls_cert_lifetime_days),
                configmap,
            )
        self._lock = threading.Lock()
        self._material: ServerMaterial | None = None
        #: The material the gRPC server was last handed (the fetcher answers None while it is current).
        self._served: ServerMaterial | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def load(self) -> None:
        """Read (files) or make and read (hub) the material; raises :class:`CertificateError`."""
        if self.keeper is None:
            try:
                material = ServerMaterial(
                    Path(self.settings.tls_cert).read_text(), Path(self.settings.tls_key).read_text(), ""
                )
            except OSError as exc:
                raise CertificateError(f"INGESTER_TLS_CERT/INGESTER_TLS_KEY: {exc}") from exc
        else:
            material = self.keeper.ensure(self.clock())
        if self.settings.require_client_certificates:
            material = attrs.evolve(material, client_ca=self._client_ca(material))
        with self._lock:
            if material != self._material:
                self._material = material

    def _client_ca(self, material: ServerMaterial) -> str:
        """The CAs whose client certificates are accepted: ``INGESTER_TLS_CLIENT_CA``, else the hub's bundle."""
        if self.settings.tls_client_ca:
            try:
                return Path(self.settings.tls_client_ca).read_text()
            except OSError as exc:
                raise CertificateError(f"INGESTER_TLS_CLIENT_CA: {exc}") from exc
        if not material.ca_bundle:
            raise CertificateError(
                "require_client_certificates: the ingester serves your own certificate (INGESTER_TLS_CERT), so set "
                "INGESTER_TLS_CLIENT_CA (tls_client_ca), the CAs whose client certificates are accepted"
            )
        return material.ca_bundle

    def client_certificate(self, cluster: str, current: KeyPair | None) -> KeyPair | None:
        """A client certificate for ``cluster``'s agent from the hub's CA (``current`` while still good);
        ``None`` with your own certificates (the hub has no CA then). Raises :class:`CertificateError`."""
        if self.keeper is None:
            return None
        lifetime = dt.timedelta(days=self.settings.tls_client_cert_lifetime_days)
        return self.keeper.client_certificate(cluster, current, self.clock(), lifetime)

    def start(self) -> None:
        """Load, then (hub certificates) renew in the background."""
        self.load()
        if self.keeper is not None and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._renew, name="ingester-certificates", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop renewing."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def material(self) -> ServerMaterial:
        """What is served now."""
        with self._lock:
            assert self._material is not None
            return self._material

    def credentials(self) -> grpc.ServerCredentials:
        """Server credentials that pick up renewed material at the next handshake."""
        first = self.material()
        self._served = first
        return grpc.dynamic_ssl_server_credentials(
            _configuration(first), self._fetch, require_client_authentication=self.settings.require_client_certificates
        )

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        # Called by gRPC before each handshake: None keeps what it has.
        current = self.material()
        if current is self._served:
            return None
        self._served = current
        return _configuration(current)

    def _renew(self) -> None:
        while not self._stop.wait(self.settings.tls_renew_check_interval):
            try:
                before = self.material()
                self.load()
                after = self.material()
                if after != before:
                    log.info("ingester TLS: serving the renewed certificate from the next connection on")
                if after.ca_bundle != before.ca_bundle and self.on_bundle_change is not None:
                    self.on_bundle_change()
            except CertificateError as exc:
                log.error(
                    "ingester TLS: renewing the certificates failed (retried in %.0f s): %s",
                    self.settings.tls_renew_check_interval,
                    exc,
                )


def _configuration(material: ServerMaterial) -> grpc.ServerCertificateConfiguration:
    return grpc.ssl_server_certificate_configuration(
        [(material.key_pem.encode(), material.cert_pem.encode())],
        root_certificates=material.client_ca.encode() if material.client_ca else None,
    )
