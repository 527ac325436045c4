"""Findings 3 and 4: a hostile registry (a real docker-registry behind a hostile loopback proxy)
cannot exhaust memory with a gzip bomb, nor draw the credentials to another origin through a
redirect, a ``Link`` page or a plain-HTTP token realm (docs/security.md#registries)."""

from __future__ import annotations

import base64
import functools
import json
import zlib
from collections.abc import Iterator

import pytest
from clusterpulse_registry.client import MAX_RESPONSE_BYTES
from clusterpulse_testing.hostile import HostileProxy
from registry_support import PASSWORD, REPOSITORIES, USERNAME, RegistryHub, RunningRegistry

BASIC = "Basic " + base64.b64encode(f"{USERNAME}:{PASSWORD}".encode()).decode()
#: What the bomb inflates to: 64 times the cap (its gzip is about 1.1 MiB, the size of the report's).
BOMB_BYTES = 64 * MAX_RESPONSE_BYTES


@pytest.fixture
def hostile(docker_registry: RunningRegistry) -> Iterator[HostileProxy]:
    """Plain HTTP in front of the htpasswd docker-registry; requests without a rule reach it."""
    with HostileProxy(docker_registry.url, tls=False) as proxy:
        yield proxy


@pytest.fixture
def elsewhere(docker_registry: RunningRegistry) -> Iterator[HostileProxy]:
    """Another origin a hostile registry points at; it records whatever reaches it."""
    with HostileProxy(docker_registry.url, tls=False) as proxy:
        yield proxy


@functools.cache
def gzip_bomb(size: int) -> bytes:
    """A gzip body of a valid catalog document ``size`` bytes long once inflated."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    head = b'{"repositories":["bomb"'
    parts = [compressor.compress(head)]
    block = b" " * (1024 * 1024)
    for _ in range((size - len(head)) // len(block)):
        parts.append(compressor.compress(block))
    parts.append(compressor.compress(b"]}"))
    parts.append(compressor.flush())
    return b"".join(parts)


def _connect(hub: RegistryHub, endpoint: str, **spec: object) -> None:
    hub.secret("creds", USERNAME, PASSWORD)
    hub.create("hostile", {"endpoint": endpoint, "credentialsRef": {"name": "creds"},
                           "monitoring": {"checkCatalog": True, "maxCatalogEntries": 10}, **spec})


def test_a_gzip_bomb_catalog_is_cut_at_the_cap_after_decompression(
        hub: RegistryHub, hostile: HostileProxy, caplog: pytest.LogCaptureFixture) -> None:
    bomb = gzip_bomb(BOMB_BYTES)
    assert len(bomb) < BOMB_BYTES // 100
    hostile.respond(r"^/v2/_catalog$", 200, bomb, headers={"Content-Encoding": "gzip"})
    _connect(hub, hostile.url)

    assert hub.reconcile("hostile").ok  # the registry itself answers /v2/: available, catalog not readable
    status = hub.status("hostile")
    assert status["features"]["catalog_accessible"] is False
    assert f"response over the limit of {MAX_RESPONSE_BYTES} bytes" in caplog.text


def test_a_gzip_bomb_health_answer_makes_the_registry_unavailable(hub: RegistryHub, hostile: HostileProxy) -> None:
    hostile.respond(r"^/v2/$", 200, gzip_bomb(BOMB_BYTES), headers={"Content-Encoding": "gzip"})
    _connect(hub, hostile.url)

    outcome = hub.reconcile("hostile")

    assert not outcome.ok
    assert f"over the limit of {MAX_RESPONSE_BYTES} bytes" in hub.status("hostile")["message"]


def test_a_catalog_link_to_another_origin_is_not_followed(
        hub: RegistryHub, hostile: HostileProxy, elsewhere: HostileProxy, caplog: pytest.LogCaptureFixture) -> None:
    page = json.dumps({"repositories": ["library/alpine"]}).encode()
    hostile.respond(r"^/v2/_catalog$", 200, page,
                    headers={"Link": f'<{elsewhere.url}/v2/_catalog?last=library%2Falpine&n=9>; rel="next"'})
    _connect(hub, hostile.url)

    assert hub.reconcile("hostile").ok
    assert hub.status("hostile")["features"]["catalog_accessible"] is False
    assert f"catalog page link to {elsewhere.url}/v2/_catalog" in caplog.text
    assert elsewhere.seen == []
    assert [headers.get("Authorization") for _, path, headers in hostile.seen if path.startswith("/v2/_catalog")] \
        == [BASIC], "the registry's own origin gets the credentials"


def test_a_redirect_to_another_origin_is_refused(hub: RegistryHub, hostile: HostileProxy,
                                                 elsewhere: HostileProxy) -> None:
    hostile.respond(r"^/v2/$", 302, b"", headers={"Location": f"{elsewhere.url}/v2/"})
    _connect(hub, hostile.url)

    outcome = hub.reconcile("hostile")

    assert not outcome.ok
    message = hub.status("hostile")["message"]
    assert f"redirect to {elsewhere.url}/v2/ refused" in message, message
    assert elsewhere.seen == []


def test_a_redirect_within_the_registry_is_followed_with_the_credentials(
        hub: RegistryHub, hostile: HostileProxy) -> None:
    hostile.respond(r"^/v2/$", 307, b"", headers={"Location": "/moved/v2/"})
    hostile.respond(r"^/moved/v2/$", 200, b"{}", headers={"Docker-Distribution-Api-Version": "registry/2.0"})
    _connect(hub, hostile.url, monitoring={"checkCatalog": False})

    assert hub.reconcile("hostile").ok
    assert hub.status("hostile")["available"] is True
    assert [(path, headers.get("Authorization")) for _, path, headers in hostile.seen] == [
        ("/v2/", BASIC), ("/moved/v2/", BASIC)]


@pytest.mark.parametrize("insecure", [False, True], ids=["refused", "insecure-opt-out"])
def test_a_plain_http_token_realm_gets_the_credentials_only_with_the_insecure_opt_out(
        hub: RegistryHub, hostile: HostileProxy, elsewhere: HostileProxy, caplog: pytest.LogCaptureFixture,
        insecure: bool) -> None:
    realm = f"{elsewhere.url}/token"
    hostile.respond(r"^/v2/$", 401, b"{}",
                    headers={"WWW-Authenticate": f'Bearer realm="{realm}",service="hostile"'})
    elsewhere.respond(r"^/token$", 200, json.dumps({"token": "t"}).encode())
    _connect(hub, hostile.url, insecure=insecure)

    hub.reconcile("hostile")

    tokens = [headers.get("Authorization") for _, path, headers in elsewhere.seen if path.startswith("/token")]
    if insecure:
        assert tokens == [BASIC]
    else:
        assert tokens == []
        assert f"token realm {realm} refused: not https://" in caplog.text


def test_the_real_registry_behind_the_proxy_still_lists_its_catalog(hub: RegistryHub, hostile: HostileProxy) -> None:
    _connect(hub, hostile.url)

    assert hub.reconcile("hostile").ok
    status = hub.status("hostile")
    assert (status["features"]["catalog_accessible"], status["repositoryCount"]) == (True, len(REPOSITORIES))
