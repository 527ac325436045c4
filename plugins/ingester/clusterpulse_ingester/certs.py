"""The ingester's own TLS certificates (docs/push-mode.md#tls): a CA and a server certificate the hub
makes, keeps in Secrets of its namespace and renews before they expire.

* Secret ``clusterpulse-ingester-ca``: the CA (``ca.crt``, ``ca.key``) and, after a CA renewal, the
  previous CA (``previous-ca.crt``, ``previous-ca.key``) until it expires.
* Secret ``clusterpulse-ingester-tls`` (``kubernetes.io/tls``): the server certificate and key, valid
  for the ingester Service's names and the configured external names, and ``ca.crt``, the bundle.
* The bundle (every CA still valid) is published in the hub ConfigMap the agent deployment copies to
  managed clusters (``COLLECTOR_CA_CONFIGMAP``, key ``COLLECTOR_CA_KEY``).

A certificate is renewed once less than a third of its lifetime is left. A renewed CA is published
next to the old one at once, but server certificates keep being issued by the old CA while it
outlives them, so agents have the old CA's last third of life to receive the new bundle.

Several replicas may run this at once: writes carry the ``resourceVersion`` read, and a conflict
(another replica wrote first) is answered by reading again.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from clusterpulse_core.kube.client import ConflictError, KubeApiError, KubeClient, NotFoundError
from clusterpulse_core.kube.credentials import decode_secret_data

log = logging.getLogger(__name__)

CA_SECRET = "clusterpulse-ingester-ca"
SERVER_SECRET = "clusterpulse-ingester-tls"
#: Label on the objects the hub made for the ingester's TLS (a ConfigMap without it is not the hub's).
LABEL = "clusterpulse.io/ingester-tls"
CA_CERT, CA_KEY, PREVIOUS_CERT, PREVIOUS_KEY = "ca.crt", "ca.key", "previous-ca.crt", "previous-ca.key"
#: After ``agent rotate-ca``: until when (RFC 3339) the previous CA still issues the server certificate.
PREVIOUS_ISSUES_UNTIL = "previous-issues-until"
TLS_CERT, TLS_KEY = "tls.crt", "tls.key"
#: A certificate is renewed when less than this share of its lifetime is left.
RENEW_SHARE = 1 / 3
#: Attempts of one :meth:`CertificateKeeper.ensure` when other replicas keep writing first.
ATTEMPTS = 3


class CertificateError(Exception):
    """The certificates could not be read, made or stored (the message names the object)."""


@attrs.frozen
class KeyPair:
    """A certificate and its private key, PEM."""

    cert_pem: str
    key_pem: str

    @property
    def cert(self) -> x509.Certificate:
        """The parsed certificate."""
        return x509.load_pem_x509_certificate(self.cert_pem.encode())

    def private_key(self) -> ec.EllipticCurvePrivateKey:
        """The parsed private key."""
        key = serialization.load_pem_private_key(self.key_pem.encode(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise CertificateError("not an EC private key")
        return key


@attrs.frozen
class ServerMaterial:
    """What the ingester serves with: its certificate and key, the CA bundle agents trust and, when client
    certificates are required, the CAs whose client certificates it accepts."""

    cert_pem: str
    key_pem: str
    ca_bundle: str
    client_ca: str = ""


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def new_ca(common_name: str, now: dt.datetime, lifetime: dt.timedelta) -> KeyPair:
    """A new self-signed CA (ECDSA P-256) valid from a minute before ``now`` for ``lifetime``."""
    key = ec.generate_private_key(ec.SECP256R1())
    identifier = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    # The issue time and the key identifier in the name keep every CA's subject distinct from its
    # predecessor's, even when both were made within the same second (a rotation right after a start):
    # clients pick a certificate's issuer by name.
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name} {now:%Y%m%dT%H%M%SZ}"),
            x509.NameAttribute(NameOID.SERIAL_NUMBER, identifier.digest.hex()[:16]),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(identifier, critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(_pem(cert), _key_pem(key))


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def new_leaf(
    ca: KeyPair, names: Sequence[str], now: dt.datetime, lifetime: dt.timedelta, client: bool = False
) -> KeyPair:
    """A certificate for ``names`` (DNS names or IP addresses) signed by ``ca``: a server certificate, or
    with ``client`` a client one (its first name is its common name)."""
    key = ec.generate_private_key(ec.SECP256R1())
    issuer = ca.cert
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + lifetime)
        .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.private_key().public_key()), critical=False
        )
        .sign(ca.private_key(), hashes.SHA256())
    )
    return KeyPair(_pem(cert), _key_pem(key))


def renewal_due(cert: x509.Certificate, now: dt.datetime) -> bool:
    """Whether less than :data:`RENEW_SHARE` of the certificate's lifetime is left at ``now``."""
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    return cert.not_valid_after_utc - now < lifetime * RENEW_SHARE


def leaf_names(cert: x509.Certificate) -> set[str]:
    """The DNS names and IP addresses a certificate is valid for."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {*san.get_values_for_type(x509.DNSName), *(str(ip) for ip in san.get_values_for_type(x509.IPAddress))}


def issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether ``ca`` signed ``cert``."""
    try:
        cert.verify_directly_issued_by(ca)
    except Exception:  # a signature mismatch, another key type: not issued by it
        return False
    return True


def key_matches(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> bool:
    """Whether ``key`` is the private key of ``cert`` (a Secret's ``tls.key`` may belong to another certificate)."""
    form = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    return cert.public_key().public_bytes(*form) == key.public_key().public_bytes(*form)


def service_names(service: str, namespace: str) -> list[str]:
    """The in-cluster names of Service ``service`` in ``namespace``."""
    return [f"{service}.{namespace}.svc", service, f"{service}.{namespace}", f"{service}.{namespace}.svc.cluster.local"]


def _time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _b64(data: Mapping[str, str]) -> dict[str, str]:
    return {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}


class CertificateKeeper:
    """Makes, renews and reads the ingester's CA and server certificate in the hub namespace."""

    def __init__(
        self,
        hub: KubeClient,
        namespace: str,
        names: Sequence[str],
        ca_lifetime: dt.timedelta,
        cert_lifetime: dt.timedelta,
        ca_configmap: tuple[str, str, str] | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.hub = hub
        self.namespace = namespace
        self.names = list(dict.fromkeys(names))
        self.ca_lifetime = ca_lifetime
        self.cert_lifetime = cert_lifetime
        #: ``(namespace, name, key)`` of the hub ConfigMap the CA bundle is published in, if any.
        self.ca_configmap = ca_configmap
        self.timeout = timeout

    # ------------------------------------------------------------------ public

    def ensure(self, now: dt.datetime) -> ServerMaterial:
        """The current server material, making or renewing what is missing or due. Raises
        :class:`CertificateError`."""
        last: Exception | None = None
        for _ in range(ATTEMPTS):
            try:
                current, previous, issues_until = self._ensure_ca(now)
                bundle = "".join(ca.cert_pem for ca in (current, previous) if ca is not None)
                # The old CA keeps issuing while it outlives the certificate (and, after a rotation, until
                # its grace ends): agents that have not yet received the new bundle still verify it.
                issuer = (
                    previous
                    if previous is not None
                    and previous.cert.not_valid_after_utc - now > self.cert_lifetime
                    and (issues_until is None or now < issues_until)
                    else current
                )
                leaf = self._ensure_leaf(issuer, bundle, now)
                if self.ca_configmap is not None:
                    self._publish(bundle)
                return ServerMaterial(leaf.cert_pem, leaf.key_pem, bundle)
            except ConflictError as exc:
                last = exc
            except KubeApiError as exc:
                raise CertificateError(f"ingester TLS certificates (namespace {self.namespace}): {exc}") from exc
        raise CertificateError(
            f"ingester TLS certificates (namespace {self.namespace}): other writers kept changing them ({last})"
        )

    def client_certificate(
        self, cluster: str, current: KeyPair | None, now: dt.datetime, lifetime: dt.timedelta
    ) -> KeyPair:
        """The client certificate of ``cluster``'s agent: ``current`` while its key is the certificate's, it
        names exactly ``cluster``, was issued by a CA of the bundle and is not due for renewal, else a new
        one from the current CA. Raises :class:`CertificateError`."""
        last: Exception | None = None
        for _ in range(ATTEMPTS):
            try:
                ca, previous, _ = self._ensure_ca(now)
                break
            except ConflictError as exc:
                last = exc
            except KubeApiError as exc:
                raise CertificateError(f"ingester CA (namespace {self.namespace}): {exc}") from exc
        else:
            raise CertificateError(f"ingester CA (namespace {self.namespace}): other writers kept changing it ({last})")
        if current is not None:
            try:
                cert = current.cert
                if (
                    key_matches(cert, current.private_key())
                    and leaf_names(cert) == {cluster}
                    and not renewal_due(cert, now)
                    and any(issued_by(cert, c.cert) for c in (ca, previous) if c is not None)
                ):
                    return current
            except (ValueError, CertificateError):
                pass
        leaf = new_leaf(ca, [cluster], now, lifetime, client=True)
        log.info(
            "ingester TLS: issued a client certificate for the agent of cluster %s, valid until %s",
            cluster,
            leaf.cert.not_valid_after_utc.isoformat(),
        )
        return leaf

    # ------------------------------------------------------------------ CA

    def _secret_path(self, name: str = "") -> str:
        return f"/api/v1/namespaces/{self.namespace}/secrets" + (f"/{name}" if name else "")

    def _read(self, name: str) -> dict[str, Any] | None:
        try:
            found = self.hub.get(self._secret_path(name), timeout=self.timeout)
        except NotFoundError:
            return None
        return found if isinstance(found, dict) else None

    def _write(self, found: dict[str, Any] | None, name: str, data: Mapping[str, str], kind: str) -> None:
        """Create the Secret, or replace its data (``resourceVersion`` kept: a concurrent writer conflicts)."""
        if found is None:
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": kind,
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "labels": {"app.kubernetes.io/part-of": "clusterpulse", LABEL: "true"},
                },
                "data": _b64(data),
            }
            try:
                self.hub.request("POST", self._secret_path(), body=body, timeout=self.timeout)
            except KubeApiError as exc:
                if exc.status == 409:
                    raise ConflictError(409, f"Secret {self.namespace}/{name} was created meanwhile") from exc
                raise
            return
        body = dict(found)
        body["data"] = _b64(data)
        body.pop("stringData", None)
        self.hub.request("PUT", self._secret_path(name), body=body, timeout=self.timeout)

    def rotate_ca(self, now: dt.datetime, grace: dt.timedelta) -> None:
        """Make a new CA now (``clusterpulse agent rotate-ca``): it is published next to the current one at
        once, and the current one stays trusted until it expires but issues the server certificate only for
        ``grace`` more, so agents have that long to receive the new bundle. Raises :class:`CertificateError`."""
        last: Exception | None = None
        for _ in range(ATTEMPTS):
            try:
                current, _previous, _until = self._ensure_ca(now)
                found = self._read(CA_SECRET)
                new = new_ca("clusterpulse-ingester-ca", now, self.ca_lifetime)
                self._write(
                    found,
                    CA_SECRET,
                    {
                        CA_CERT: new.cert_pem,
                        CA_KEY: new.key_pem,
                        PREVIOUS_CERT: current.cert_pem,
                        PREVIOUS_KEY: current.key_pem,
                        PREVIOUS_ISSUES_UNTIL: (now + grace).isoformat(),
                    },
                    "Opaque",
                )
                log.info(
                    "ingester TLS: rotated the CA in Secret %s/%s; the previous one issues until %s",
                    self.namespace,
                    CA_SECRET,
                    (now + grace).isoformat(),
                )
                return
            except ConflictError as exc:
                last = exc
            except KubeApiError as exc:
                raise CertificateError(f"ingester CA (namespace {self.namespace}): {exc}") from exc
        raise CertificateError(f"ingester CA (namespace {self.namespace}): other writers kept changing it ({last})")

    def _ensure_ca(self, now: dt.datetime) -> tuple[KeyPair, KeyPair | None, dt.datetime | None]:
        """The current CA, the previous one (while valid) and until when the previous one issues (after a
        rotation), making or renewing the CA when due."""
        found = self._read(CA_SECRET)
        data = decode_secret_data(found) if found is not None else {}
        current = KeyPair(data[CA_CERT], data[CA_KEY]) if data.get(CA_CERT) and data.get(CA_KEY) else None
        previous = (
            KeyPair(data[PREVIOUS_CERT], data[PREVIOUS_KEY])
            if data.get(PREVIOUS_CERT) and data.get(PREVIOUS_KEY)
            else None
        )
        try:
            if previous is not None and previous.cert.not_valid_after_utc <= now:
                previous = None
            if current is not None and (current.cert.not_valid_after_utc <= now or not current.cert.subject):
                current = None
            if current is not None:
                current.private_key()
        except (ValueError, CertificateError) as exc:
            log.warning(
                "ingester TLS: Secret %s/%s holds an unreadable CA (%s): making a new one",
                self.namespace,
                CA_SECRET,
                exc,
            )
            current = previous = None
        changed = current is None
        if current is None:
            current = new_ca("clusterpulse-ingester-ca", now, self.ca_lifetime)
            log.info("ingester TLS: made a new CA in Secret %s/%s", self.namespace, CA_SECRET)
        elif renewal_due(current.cert, now):
            previous, current, changed = current, new_ca("clusterpulse-ingester-ca", now, self.ca_lifetime), True
            log.info(
                "ingester TLS: renewed the CA in Secret %s/%s (the previous one stays trusted until %s)",
                self.namespace,
                CA_SECRET,
                previous.cert.not_valid_after_utc.isoformat(),
            )
        kept_previous = bool(data.get(PREVIOUS_CERT)) and previous is None
        if changed or kept_previous:
            new = {CA_CERT: current.cert_pem, CA_KEY: current.key_pem}
            if previous is not None:
                new.update({PREVIOUS_CERT: previous.cert_pem, PREVIOUS_KEY: previous.key_pem})
            self._write(found, CA_SECRET, new, "Opaque")
            return current, previous, None
        return current, previous, _time(data.get(PREVIOUS_ISSUES_UNTIL, ""))

    # ------------------------------------------------------------------ server certificate

    def _ensure_leaf(self, issuer: KeyPair, bundle: str, now: dt.datetime) -> KeyPair:
        found = self._read(SERVER_SECRET)
        data = decode_secret_data(found) if found is not None else {}
        if data.get(TLS_CERT) and data.get(TLS_KEY):
            leaf = KeyPair(data[TLS_CERT], data[TLS_KEY])
            try:
                cert = leaf.cert
                usable = (
                    not renewal_due(cert, now)
                    and leaf_names(cert) == set(self.names)
                    and issued_by(cert, issuer.cert)
                    and data.get(CA_CERT) == bundle
                )
            except ValueError:
                usable = False
            if usable:
                return leaf
        leaf = new_leaf(issuer, self.names, now, self.cert_lifetime)
        self._write(
            found, SERVER_SECRET, {TLS_CERT: leaf.cert_pem, TLS_KEY: leaf.key_pem, CA_CERT: bundle}, "kubernetes.io/tls"
        )
        log.info(
            "ingester TLS: issued a server certificate for %s, valid until %s (Secret %s/%s)",
            ", ".join(self.names),
            leaf.cert.not_valid_after_utc.isoformat(),
            self.namespace,
            SERVER_SECRET,
        )
        return leaf

    # ------------------------------------------------------------------ the CA bundle for agents

    def _publish(self, bundle: str) -> None:
        assert self.ca_configmap is not None
        namespace, name, key = self.ca_configmap
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        try:
            found = self.hub.get(f"{path}/{name}", timeout=self.timeout)
        except NotFoundError:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {"app.kubernetes.io/part-of": "clusterpulse", LABEL: "true"},
                },
                "data": {key: bundle},
            }
            try:
                self.hub.request("POST", path, body=body, timeout=self.timeout)
            except KubeApiError as exc:
                if exc.status == 409:
                    raise ConflictError(409, f"ConfigMap {namespace}/{name} was created meanwhile") from exc
                raise
            return
        labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(LABEL) != "true":
            raise CertificateError(
                f"ConfigMap {namespace}/{name} exists and was not made by the hub (no label {LABEL}=true): it "
                f'holds another CA bundle; delete it, or bring your own certificate (tls_certificates = "files")'
            )
        if ((found.get("data") or {}).get(key)) == bundle:
            return
        body = dict(found)
        body["data"] = {**(found.get("data") or {}), key: bundle}
        self.hub.request("PUT", f"{path}/{name}", body=body, timeout=self.timeout)
