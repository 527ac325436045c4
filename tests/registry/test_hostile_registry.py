"""Findings 3 and 4: a hostile registry (a real docker-registry behind a hostile loopback proxy)
cannot exhaust memory with a gzip bomb, nor draw the credentials to another origin through a
redirect, a ``Link`` page, a plain-HTTP token realm or a token realm on another origin that
``token_realm_hosts`` does not list (docs/security.md#registries)."""

from __future__ import annotations

import base64
import functools
import json
import zlib
from collections.abc import Callable, Iterator

import pytest
from clusterpulse_registry.client import MAX_RESPONSE_BYTES
from clusterpulse_registry.settings import RegistrySettings
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
    hub.create(
        "hostile",
        {
            "endpoint": endpoint,
            "credentialsRef": {"name": "creds"},
            "monitoring": {"checkCatalog": True, "maxCatalogEntries": 10},
            **spec,
        },
    )


def test_a_gzip_bomb_catalog_is_cut_at_the_cap_after_decompression(
    hub: RegistryHub, hostile: HostileProxy, caplog: pytest.LogCaptureFixture
) -> None:
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
    hub: RegistryHub, hostile: HostileProxy, elsewhere: HostileProxy, caplog: pytest.LogCaptureFixture
) -> None:
    page = json.dumps({"repositories": ["library/alpine"]}).encode()
    hostile.respond(
        r"^/v2/_catalog$",
        200,
        page,
        headers={"Link": f'<{elsewhere.url}/v2/_catalog?last=library%2Falpine&n=9>; rel="next"'},
    )
    _connect(hub, hostile.url)

    assert hub.reconcile("hostile").ok
    assert hub.status("hostile")["features"]["catalog_accessible"] is False
    assert f"catalog page link to {elsewhere.url}/v2/_catalog" in caplog.text
    assert elsewhere.seen == []
    assert [headers.get("Authorization") for _, path, headers in hostile.seen if path.startswith("/v2/_catalog")] == [
        BASIC
    ], "the registry's own origin gets the credentials"


def test_a_redirect_to_another_origin_is_refused(
    hub: RegistryHub, hostile: HostileProxy, elsewhere: HostileProxy
) -> None:
    hostile.respond(r"^/v2/$", 302, b"", headers={"Location": f"{elsewhere.url}/v2/"})
    _connect(hub, hostile.url)

    outcome = hub.reconcile("hostile")

    assert not outcome.ok
    message = hub.status("hostile")["message"]
    assert f"redirect to {elsewhere.url}/v2/ refused" in message, message
    assert elsewhere.seen == []


def test_a_redirect_within_the_registry_is_followed_with_the_credentials(
    hub: RegistryHub, hostile: HostileProxy
) -> None:
    hostile.respond(r"^/v2/$", 307, b"", headers={"Location": "/moved/v2/"})
    hostile.respond(r"^/moved/v2/$", 200, b"{}", headers={"Docker-Distribution-Api-Version": "registry/2.0"})
    _connect(hub, hostile.url, monitoring={"checkCatalog": False})

    assert hub.reconcile("hostile").ok
    assert hub.status("hostile")["available"] is True
    assert [(path, headers.get("Authorization")) for _, path, headers in hostile.seen] == [
        ("/v2/", BASIC),
        ("/moved/v2/", BASIC),
    ]


def _token_requests(server: HostileProxy) -> list[str | None]:
    """The ``Authorization`` header of every token request ``server`` received (``None``: none sent)."""
    return [headers.get("Authorization") for _, path, headers in server.seen if path.startswith("/token")]


def _challenge(registry: HostileProxy, realm: str, token_server: HostileProxy) -> None:
    """``registry`` answers ``/v2/`` with a Bearer challenge naming ``realm``, served by ``token_server``."""
    registry.respond(r"^/v2/$", 401, b"{}", headers={"WWW-Authenticate": f'Bearer realm="{realm}",service="hostile"'})
    token_server.respond(r"^/token", 200, json.dumps({"token": "t"}).encode())


@pytest.mark.parametrize("insecure", [False, True], ids=["refused", "insecure-opt-out"])
def test_a_plain_http_token_realm_gets_the_credentials_only_with_the_insecure_opt_out(
    hub: RegistryHub, hostile: HostileProxy, caplog: pytest.LogCaptureFixture, insecure: bool
) -> None:
    realm = f"{hostile.url}/token"  # the registry's own origin: only the scheme is in question
    _challenge(hostile, realm, hostile)
    _connect(hub, hostile.url, insecure=insecure)

    hub.reconcile("hostile")

    if insecure:
        assert _token_requests(hostile) == [BASIC]
    else:
        assert _token_requests(hostile) == []
        assert f"token realm {realm} refused: not https://" in caplog.text


def _realm_url(server: HostileProxy, host: str) -> str:
    """``server``'s token URL spelled with ``host`` (``localhost`` and ``127.0.0.1`` are two origins)."""
    return f"http://{host}:{server.url.rsplit(':', 1)[1]}/token"


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"], ids=["other-host", "same-host-other-port"])
def test_a_token_realm_on_another_origin_never_gets_the_credentials(
    hub: RegistryHub, hostile: HostileProxy, elsewhere: HostileProxy, host: str
) -> None:
    realm = _realm_url(elsewhere, host)
    _challenge(hostile, realm, elsewhere)
    _connect(hub, hostile.url, insecure=True)  # plain HTTP allowed: only the origin is in question

    outcome = hub.reconcile("hostile")

    assert not outcome.ok
    assert elsewhere.seen == [], "nothing, credentials least of all, is sent to the refused realm"
    status = hub.status("hostile")
    assert status["phase"] == "Error"
    assert (
        f"Registry unavailable: unexpected status code: 401: token realm {realm} refused: host {host} is not "
        f"the registry's origin"
    ) in status["message"], status["message"]
    assert "plugins.registry.token_realm_hosts does not list it" in status["message"]
    assert 'token_realm_hosts = ["auth.docker.io"]' in status["message"]


def test_a_token_realm_on_a_listed_host_gets_the_credentials(
    make_hub: Callable[..., RegistryHub], recorder: object, hostile: HostileProxy, elsewhere: HostileProxy
) -> None:
    hub = make_hub(
        extra={"recorder": recorder}, settings={"registry": RegistrySettings(token_realm_hosts=("LocalHost",))}
    )
    _challenge(hostile, _realm_url(elsewhere, "localhost"), elsewhere)
    _connect(hub, hostile.url, insecure=True)

    hub.reconcile("hostile")

    assert _token_requests(elsewhere) == [BASIC]
    assert [headers.get("Authorization") for _, path, headers in hostile.seen if path == "/v2/"][-1] == "Bearer t"


def test_an_anonymous_registry_asks_another_origin_for_a_token_without_credentials(
    hub: RegistryHub, hostile: HostileProxy, elsewhere: HostileProxy
) -> None:
    _challenge(hostile, _realm_url(elsewhere, "localhost"), elsewhere)
    hub.create("hostile", {"endpoint": hostile.url, "insecure": True, "monitoring": {"checkCatalog": False}})

    assert hub.reconcile("hostile").ok

    assert _token_requests(elsewhere) == [None]
    assert hub.status("hostile")["available"] is True


def test_the_real_registry_behind_the_proxy_still_lists_its_catalog(hub: RegistryHub, hostile: HostileProxy) -> None:
    _connect(hub, hostile.url)

    assert hub.reconcile("hostile").ok
    status = hub.status("hostile")
    assert (status["features"]["catalog_accessible"], status["repositoryCount"]) == (True, len(REPOSITORIES))
