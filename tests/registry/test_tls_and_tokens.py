"""TLS verification, plain HTTP (insecure) and the Bearer token challenge against real docker-registry servers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from clusterpulse_registry.settings import RegistrySettings
from registry_pki import Pki
from registry_support import PASSWORD, REPOSITORIES, USERNAME, RegistryHub, RunningRegistry, TokenRegistry


def test_tls_fails_without_trust(hub: RegistryHub, docker_registry_tls: RunningRegistry) -> None:
    hub.create("tls", {"endpoint": docker_registry_tls.url, "skipTLSVerify": False})

    outcome = hub.reconcile("tls")

    assert not outcome.ok
    status = hub.status("tls")
    assert (status["phase"], status["health"], status["available"]) == ("Error", "unhealthy", False)
    assert status["message"].startswith("Registry unavailable: request failed: Get ")
    assert "tls: certificate verify failed" in status["message"]


def test_tls_passes_with_skip_tls_verify(hub: RegistryHub, docker_registry_tls: RunningRegistry) -> None:
    hub.create("tls", {"endpoint": docker_registry_tls.url, "skipTLSVerify": True})

    outcome = hub.reconcile("tls")

    assert outcome.ok, outcome.detail
    status = hub.status("tls")
    assert (status["phase"], status["health"], status["available"]) == ("Connected", "healthy", True)
    assert status["version"] == "registry/2.0"


def test_tls_passes_with_the_ca_in_the_system_trust(
    hub: RegistryHub, docker_registry_tls: RunningRegistry, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki.ca_cert))
    hub.create("tls", {"endpoint": f"localhost:{docker_registry_tls.process.port}"})

    outcome = hub.reconcile("tls")

    assert outcome.ok, outcome.detail
    assert hub.status("tls")["health"] == "healthy"


def test_insecure_means_plain_http_for_an_endpoint_without_scheme(
    hub: RegistryHub, docker_registry: RunningRegistry
) -> None:
    address = f"127.0.0.1:{docker_registry.process.port}"
    hub.create("plain", {"endpoint": address, "insecure": True})
    hub.create("assumed-https", {"endpoint": address})

    assert hub.reconcile("plain").ok
    assert not hub.reconcile("assumed-https").ok

    assert hub.status("plain")["available"] is True
    message = hub.status("assumed-https")["message"]
    assert message.startswith(f'Registry unavailable: request failed: Get "https://{address}/v2/": tls: ')


@pytest.fixture
def token_hub(make_hub: Callable[..., RegistryHub], recorder: object) -> RegistryHub:
    """A hub whose registries may send their credentials to the token issuer's host (another origin,
    as Docker Hub's auth.docker.io is: docs/security.md#registries)."""
    return make_hub(
        extra={"recorder": recorder}, settings={"registry": RegistrySettings(token_realm_hosts=("127.0.0.1",))}
    )


def test_bearer_challenge_is_answered_with_a_cached_token(
    token_hub: RegistryHub, token_registry: TokenRegistry
) -> None:
    hub = token_hub
    hub.secret("token-creds", USERNAME, PASSWORD)
    # The registry and its token issuer speak plain HTTP: an http:// realm needs the explicit opt-out.
    hub.create(
        "tokens",
        {
            "endpoint": token_registry.registry.url,
            "credentialsRef": {"name": "token-creds"},
            "insecure": True,
            "monitoring": {"checkCatalog": True},
        },
    )
    issued_before = len(token_registry.issuer.requests)

    outcome = hub.reconcile("tokens")

    assert outcome.ok, outcome.detail
    status = hub.status("tokens")
    assert (status["phase"], status["health"]) == ("Connected", "healthy")
    assert status["features"] == {"docker_v2_api": True, "requires_auth": True, "catalog_accessible": True}
    assert status["repositoryCount"] == len(REPOSITORIES)
    scopes = [query.get("scope", [""])[0] for _, query in token_registry.issuer.requests[issued_before:]]
    assert scopes == ["", "registry:catalog:*"]

    assert hub.reconcile("tokens").ok
    assert len(token_registry.issuer.requests) == issued_before + 2, "tokens are reused until they expire"
    assert hub.status("tokens")["features"]["requires_auth"] is True


def test_bearer_token_refused_for_wrong_credentials(
    token_hub: RegistryHub, token_registry: TokenRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    hub = token_hub
    hub.secret("token-creds", USERNAME, "wrong")
    hub.create(
        "tokens", {"endpoint": token_registry.registry.url, "credentialsRef": {"name": "token-creds"}, "insecure": True}
    )

    outcome = hub.reconcile("tokens")

    assert outcome.detail == "Registry unavailable: unexpected status code: 401"
    assert hub.status("tokens")["phase"] == "Error"
    assert f"token endpoint {token_registry.issuer.realm} returned 401" in caplog.text
    assert "check the credentials in Secret clusterpulse/token-creds" in caplog.text


def test_bearer_registry_without_credentials_is_available_and_requires_auth(
    hub: RegistryHub, token_registry: TokenRegistry
) -> None:
    hub.create("tokens", {"endpoint": token_registry.registry.url})

    assert hub.reconcile("tokens").ok

    status = hub.status("tokens")
    assert (status["available"], status["features"]) == (True, {"docker_v2_api": True, "requires_auth": True})
