"""Private certificate authorities for the emulators: HTTPS on loopback with a CA the test trusts.

:func:`make_certificates` writes a CA and one server certificate; :func:`loopback_ca` is the
process-wide one for ``127.0.0.1``/``localhost`` that :class:`~clusterpulse_testing.kube_api.KubeAPI`
uses with ``tls=True`` (the ``kube_api`` fixture's default), so a managed cluster's credentials
Secret can carry its ``ca.crt`` as a real one does.
"""

from __future__ import annotations

import atexit
import datetime
import ipaddress
import os
import shutil
import tempfile
import threading
from pathlib import Path

import attrs


@attrs.frozen
class Certificates:
    """A CA and a server certificate signed by it, as PEM files (and the CA's PEM text)."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    @property
    def ca_pem(self) -> str:
        """The CA certificate, PEM (what a Secret's ``ca.crt`` holds)."""
        return self.ca_file.read_text()


def make_certificates(
    directory: Path, server_name: str, ip: str | None = None, ca_name: str = "clusterpulse test CA"
) -> Certificates:
    """A private CA and a server certificate for ``server_name`` (and ``ip`` when given), in ``directory``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name(ca_name))
        .issuer_name(name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(server_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(server_name), *([x509.IPAddress(ipaddress.ip_address(ip))] if ip else [])]
            ),
            critical=False,
        )
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    made = Certificates(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    made.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    made.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    made.key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return made


#: Where the loopback CA is, for the processes a test starts (they trust the same CA).
LOOPBACK_ENV = "CLUSTERPULSE_TEST_TLS_DIR"
_lock = threading.Lock()
_loopback: Certificates | None = None


def loopback_ca() -> Certificates:
    """The CA and certificate for ``localhost`` and ``127.0.0.1`` of this process and its children.

    Made once (removed at exit) and named in ``$CLUSTERPULSE_TEST_TLS_DIR``, so a subprocess the
    test starts (a manager, a replica) uses the same CA rather than making its own.
    """
    global _loopback
    with _lock:
        if _loopback is None:
            inherited = os.environ.get(LOOPBACK_ENV, "")
            if inherited and (Path(inherited) / "tls.key").is_file():
                directory = Path(inherited)
                _loopback = Certificates(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
            else:
                directory = Path(tempfile.mkdtemp(prefix="clusterpulse-tls-"))
                atexit.register(shutil.rmtree, directory, True)
                _loopback = make_certificates(directory, "localhost", ip="127.0.0.1")
                os.environ[LOOPBACK_ENV] = str(directory)
        return _loopback
