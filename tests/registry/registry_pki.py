"""A throw-away certificate authority and server certificate for the TLS tests."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


@attrs.frozen
class Pki:
    """PEM files of a CA, a server certificate signed by it, and an RSA key pair for token signing."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    signing_cert: Path
    signing_key: rsa.RSAPrivateKey
    signing_cert_der: bytes


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def make_pki(directory: Path, hostnames: tuple[str, ...] = ("localhost", "registry.example.com")) -> Pki:
    """Write a CA, a server certificate for 127.0.0.1 and ``hostnames``, and a token-signing pair."""
    now = datetime.datetime.now(datetime.UTC)
    valid_from, valid_to = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("ClusterPulse test CA"))
        .issuer_name(_name("ClusterPulse test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_to)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    server_key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    names += [x509.DNSName(host) for host in hostnames]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hostnames[0]))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_to)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signing_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("token-issuer"))
        .issuer_name(_name("token-issuer"))
        .public_key(signing_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_to)
        .sign(signing_key, hashes.SHA256())
    )

    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(
        ca_cert=directory / "ca.crt",
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        signing_cert=directory / "token-signing.crt",
        signing_key=signing_key,
        signing_cert_der=signing_cert.public_bytes(serialization.Encoding.DER),
    )
    pki.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.server_key, server_key)
    pki.signing_cert.write_bytes(signing_cert.public_bytes(serialization.Encoding.PEM))
    return pki
