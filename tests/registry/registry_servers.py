"""Real registries for the tests: docker-registry (CNCF distribution) processes and a token issuer.

``docker-registry`` is configured with a YAML file written into the server's work directory:
htpasswd (bcrypt) or token authentication, filesystem storage, optional TLS. Images are
pushed with plain HTTP uploads (blob upload POST/PUT, then a schema2 manifest PUT).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import secrets
import tarfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import attrs
import bcrypt
import requests
import yaml
from clusterpulse_testing.servers import ServerProcess, free_port
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
TOKEN_SERVICE = "clusterpulse-test-registry"
TOKEN_ISSUER = "clusterpulse-test-issuer"


@attrs.frozen
class RegistryAuth:
    """How a test registry authenticates: htpasswd users, or tokens from an issuer."""

    htpasswd: dict[str, str] = attrs.field(factory=dict)
    token_realm: str = ""
    token_cert: Path | None = None


def registry_process(
    binary: str,
    auth: RegistryAuth,
    tls: tuple[Path, Path] | None = None,
    storage: Path | None = None,
    catalog_page_size: int = 0,
    access_log: bool = False,
) -> ServerProcess:
    """A docker-registry on 127.0.0.1 with the given authentication, TLS (cert, key), storage dir
    and catalog page size (``catalog.maxentries``; 0 = the registry's default); with ``access_log``
    every request is a line of its log (``log_tail``)."""

    def command(port: int, workdir: Path) -> list[str]:
        config: dict[str, Any] = {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": not access_log}},
            "storage": {"filesystem": {"rootdirectory": str(storage or workdir / "data")}, "delete": {"enabled": True}},
            "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
            "health": {"storagedriver": {"enabled": False}},
        }
        if catalog_page_size:
            config["catalog"] = {"maxentries": catalog_page_size}
        if tls is not None:
            config["http"]["tls"] = {"certificate": str(tls[0]), "key": str(tls[1])}
        if auth.htpasswd:
            htpasswd = workdir / "htpasswd"
            htpasswd.write_text(
                "".join(
                    f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()}\n"
                    for user, password in auth.htpasswd.items()
                )
            )
            config["auth"] = {"htpasswd": {"realm": "clusterpulse-test", "path": str(htpasswd)}}
        elif auth.token_realm:
            config["auth"] = {
                "token": {
                    "realm": auth.token_realm,
                    "service": TOKEN_SERVICE,
                    "issuer": TOKEN_ISSUER,
                    "rootcertbundle": str(auth.token_cert),
                }
            }
        path = workdir / "config.yml"
        path.write_text(yaml.safe_dump(config))
        return [binary, "serve", str(path)]

    return ServerProcess("docker-registry", command)


# --------------------------------------------------------------------------- pushing images


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _layer(content: bytes) -> tuple[bytes, bytes]:
    """A gzipped tar layer holding one file, and the uncompressed tar (for the config's diff_ids)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("hello.txt")
        info.size = len(content)
        archive.addfile(info, io.BytesIO(content))
    tar = buffer.getvalue()
    return gzip.compress(tar, mtime=0), tar


def upload_blob(session: requests.Session, base_url: str, repository: str, data: bytes) -> str:
    """Monolithic blob upload: ``POST /v2/<repo>/blobs/uploads/`` then ``PUT <location>&digest=``."""
    started = session.post(f"{base_url}/v2/{repository}/blobs/uploads/", timeout=10)
    assert started.status_code == 202, f"blob upload start: {started.status_code} {started.text}"
    location = urljoin(base_url + "/", started.headers["Location"])
    digest = _digest(data)
    separator = "&" if "?" in location else "?"
    done = session.put(
        f"{location}{separator}digest={digest}",
        data=data,
        headers={"Content-Type": "application/octet-stream"},
        timeout=10,
    )
    assert done.status_code == 201, f"blob upload: {done.status_code} {done.text}"
    return digest


def push_image(session: requests.Session, base_url: str, repository: str, tag: str = "latest") -> str:
    """Push a one-layer image as a schema2 manifest with a config blob; returns the manifest digest."""
    layer, tar = _layer(f"{repository}:{tag}\n".encode())
    config = json.dumps(
        {"architecture": "amd64", "os": "linux", "config": {}, "rootfs": {"type": "layers", "diff_ids": [_digest(tar)]}}
    ).encode()
    layer_digest = upload_blob(session, base_url, repository, layer)
    config_digest = upload_blob(session, base_url, repository, config)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_V2,
            "config": {
                "mediaType": "application/vnd.docker.container.image.v1+json",
                "size": len(config),
                "digest": config_digest,
            },
            "layers": [
                {
                    "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": len(layer),
                    "digest": layer_digest,
                }
            ],
        }
    ).encode()
    answer = session.put(
        f"{base_url}/v2/{repository}/manifests/{tag}", data=manifest, headers={"Content-Type": MANIFEST_V2}, timeout=10
    )
    assert answer.status_code == 201, f"manifest push: {answer.status_code} {answer.text}"
    return _digest(manifest)


# --------------------------------------------------------------------------- token issuer


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def libtrust_key_id(key: rsa.RSAPublicKey) -> str:
    """The key id distribution matches a token's ``kid`` against (libtrust: SHA-256 of the DER key, base32)."""
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    text = base64.b32encode(hashlib.sha256(der).digest()[:30]).decode("ascii").rstrip("=")
    return ":".join(text[i : i + 4] for i in range(0, len(text), 4))


def _access(scope: str) -> list[dict[str, Any]]:
    """``registry:catalog:*`` -> the token's ``access`` claim."""
    grants = []
    for item in scope.split():
        kind, _, rest = item.partition(":")
        name, _, actions = rest.rpartition(":")
        if kind and name:
            grants.append({"type": kind, "name": name, "actions": actions.split(",")})
    return grants


class TokenIssuer:
    """A registry token endpoint (``GET /token?service=&scope=`` with Basic credentials) issuing RS256 JWTs."""

    def __init__(self, signing_key: rsa.RSAPrivateKey, users: dict[str, str], lifetime: int = 300) -> None:
        self.signing_key = signing_key
        self.users = users
        self.lifetime = lifetime
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self.port = free_port()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def realm(self) -> str:
        """The token endpoint URL registries put in their challenge."""
        return f"http://127.0.0.1:{self.port}/token"

    def start(self) -> TokenIssuer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def _user(self, header: str) -> str | None:
        if not header.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        return user if self.users.get(user) == password else None

    def token(self, subject: str, scope: str) -> str:
        """A signed JWT for ``subject`` granting ``scope``."""
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "kid": libtrust_key_id(self.signing_key.public_key())}
        claims = {
            "iss": TOKEN_ISSUER,
            "sub": subject,
            "aud": TOKEN_SERVICE,
            "exp": now + self.lifetime,
            "nbf": now - 10,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": _access(scope),
        }
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = self.signing_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64url(signature)}"

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        """Answer one token request: 401 without valid credentials, else the token as JSON."""
        query = parse_qs(urlsplit(request.path).query)
        self.requests.append((request.path, query))
        user = self._user(request.headers.get("Authorization", ""))
        if user is None:
            body, status = b'{"details":"incorrect username or password"}', 401
        else:
            token = self.token(user, " ".join(query.get("scope", [])))
            body = json.dumps({"token": token, "access_token": token, "expires_in": self.lifetime}).encode()
            status = 200
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` (bounded) until it holds; returns whether it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()
