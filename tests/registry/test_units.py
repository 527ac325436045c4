"""The plugin's small parts: CRD declaration, status patches, challenges, tokens, links, endpoints."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from clusterpulse_registry.auth import (
    BearerChallenge,
    Credentials,
    TokenCache,
    parse_bearer_challenge,
    parse_token_response,
)
from clusterpulse_registry.client import next_link
from clusterpulse_registry.endpoint import normalise_endpoint
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_registry.policy import desired_status, health_message, phase_for
from clusterpulse_registry.resource import RegistryConnectionStatus, parse_spec
from clusterpulse_registry.result import HealthCheckResult
from clusterpulse_registry.settings import RegistrySettings
from clusterpulse_registry.status_patch import status_patch

from clusterpulse_core.config import ConfigError
from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import load

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def test_plugin_declares_the_registry_connection_kind_through_its_entry_point() -> None:
    host = PluginHost(["registry"])
    owner, kind = host.kinds["RegistryConnection"]
    assert owner == "registry"
    assert kind.workers == 5


def test_crd_matches_the_spec() -> None:
    crd = crd_manifest(REGISTRY_CONNECTION)
    assert crd["metadata"]["name"] == "registryconnections.clusterpulse.io"
    names = crd["spec"]["names"]
    assert (names["kind"], names["listKind"], names["plural"], names["singular"], names["shortNames"]) == (
        "RegistryConnection",
        "RegistryConnectionList",
        "registryconnections",
        "registryconnection",
        ["rc", "regcon"],
    )
    assert crd["spec"]["scope"] == "Namespaced"
    [version] = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Display Name", "string", ".spec.displayName"),
        ("Endpoint", "string", ".spec.endpoint"),
        ("Type", "string", ".spec.type"),
        ("Available", "boolean", ".status.available"),
        ("Health", "string", ".status.health"),
        ("Response Time", "integer", ".status.responseTime"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    spec, status = schema["spec"], schema["status"]
    assert spec["required"] == ["endpoint"]
    assert set(spec["properties"]) == {
        "displayName",
        "endpoint",
        "type",
        "credentialsRef",
        "insecure",
        "skipTLSVerify",
        "monitoring",
        "labels",
        "healthCheckPaths",
    }
    assert spec["properties"]["credentialsRef"]["required"] == ["name"]
    assert set(spec["properties"]["monitoring"]["properties"]) == {
        "interval",
        "timeout",
        "checkCatalog",
        "maxCatalogEntries",
    }
    assert status["required"] == ["available"]
    assert status["properties"]["responseTime"] == {
        "type": "integer",
        "format": "int64",
        "description": "Milliseconds of GET /v2/.",
    }
    assert status["properties"]["features"]["additionalProperties"] == {"type": "boolean"}


def test_spec_reads_camel_case_and_skip_tls_verify() -> None:
    spec = parse_spec(
        {
            "spec": {
                "endpoint": "r.io",
                "skipTLSVerify": True,
                "displayName": "R",
                "monitoring": {"maxCatalogEntries": 7},
                "healthCheckPaths": ["/v2/"],
            }
        }
    )
    assert (spec.endpoint, spec.skip_tls_verify, spec.display_name) == ("r.io", True, "R")
    assert spec.monitoring.max_catalog_entries == 7
    assert spec.credentials_ref is None


def test_invalid_spec_is_terminal() -> None:
    from clusterpulse_core.kinds import TerminalError

    with pytest.raises(TerminalError, match="invalid spec"):
        parse_spec({"spec": {"endpoint": "r.io", "monitoring": {"interval": "soon"}}})


def test_phase_is_error_when_unavailable() -> None:
    assert phase_for(HealthCheckResult(available=True)) == "Connected"
    assert phase_for(HealthCheckResult(available=False)) == "Error"


def test_message_with_error_text() -> None:
    result = HealthCheckResult(available=False, error="unexpected status code: 503")
    assert health_message("unhealthy", result) == "Registry unavailable: unexpected status code: 503"


def test_status_patch_removes_what_the_new_status_lacks_and_keeps_foreign_keys() -> None:
    old = {
        "phase": "Connected",
        "health": "healthy",
        "available": True,
        "version": "registry/2.0",
        "features": {"docker_v2_api": True, "catalog_accessible": True},
        "repositoryCount": 4,
        "conditions": [{"type": "Other"}],
        "message": "m",
        "responseTime": 5,
    }
    result = HealthCheckResult(available=False, response_time_ms=3, error="request failed: x")
    new = desired_status(result, "unhealthy", "Registry unavailable: request failed: x", NOW)

    patch = status_patch(old, new, catalog_checked=False)

    assert patch == {
        "phase": "Error",
        "health": "unhealthy",
        "available": False,
        "lastCheckTime": "2025-01-01T00:00:00Z",
        "responseTime": 3,
        "message": "Registry unavailable: request failed: x",
        "version": None,
        "features": None,
    }


def test_status_patch_nulls_dropped_features_and_writes_catalog_size_when_checked() -> None:
    old = {"features": {"docker_v2_api": True, "pagination": True}, "repositoryCount": 4, "available": True}
    result = HealthCheckResult(
        available=True,
        response_time_ms=3,
        repository_count=5,
        features={"docker_v2_api": True, "catalog_accessible": True},
    )
    new = desired_status(result, "healthy", "m", NOW)

    patch = status_patch(old, new, catalog_checked=True)

    assert patch["features"] == {"pagination": None, "catalog_accessible": True}
    assert patch["repositoryCount"] == 5
    assert "available" not in patch


def test_status_patch_of_an_identical_status_is_empty() -> None:
    new = RegistryConnectionStatus(
        phase="Connected",
        health="healthy",
        available=True,
        last_check_time=NOW,
        response_time=1,
        message="m",
        features={"a": True},
    )
    from clusterpulse_core import serde

    assert status_patch(serde.unstructure(new), new, catalog_checked=True) == {}


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull"',
            BearerChallenge("https://auth.docker.io/token", "registry.docker.io", "repository:a/b:pull"),
        ),
        (
            'Basic realm="x", Bearer realm="https://t.example/token", service=reg',
            BearerChallenge("https://t.example/token", "reg", ""),
        ),
        (
            'bearer realm="https://t/\\"q\\"",scope="registry:catalog:*"',
            BearerChallenge('https://t/"q"', "", "registry:catalog:*"),
        ),
        ('Basic realm="registry"', None),
        ('Bearer service="no-realm"', None),
        ("", None),
    ],
)
def test_bearer_challenge_parsing(header: str, expected: BearerChallenge | None) -> None:
    assert parse_bearer_challenge(header) == expected


def test_token_response_accepts_token_or_access_token() -> None:
    assert parse_token_response(b'{"access_token": "a", "expires_in": 30}').value == "a"
    assert parse_token_response(b'{"token": "t", "access_token": "a"}').value == "t"
    with pytest.raises(ValueError, match="no token"):
        parse_token_response(b'{"expires_in": 30}')
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_token_response(b"<html>")


def test_token_cache_expires_tokens() -> None:
    now = [1000.0]
    cache = TokenCache(clock=lambda: now[0])
    challenge = BearerChallenge("https://t/token", "svc")
    cache.put(challenge, "tok", expires_in=60)
    assert cache.get(challenge) == "tok"
    now[0] += 54
    assert cache.get(challenge) == "tok"
    now[0] += 2  # within the renewal margin before expiry
    assert cache.get(challenge) is None
    cache.put(challenge, "tok2", expires_in=0)  # no lifetime given: 60 s
    assert cache.get(challenge) == "tok2"
    cache.drop(challenge)
    assert cache.get(challenge) is None


def test_credentials_repr_hides_the_password() -> None:
    credentials = Credentials("user", "hunter2", "Secret ns/name")
    assert "hunter2" not in repr(credentials)
    assert credentials.complete and not Credentials("user", "").complete


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('</v2/_catalog?last=a%2Fx&n=1>; rel="next"', "http://r:5000/v2/_catalog?last=a%2Fx&n=1"),
        ("<https://other/v2/_catalog?last=b>; rel=next", "https://other/v2/_catalog?last=b"),
        ('</x>; rel="prev"', None),
        (None, None),
    ],
)
def test_next_link(header: str | None, expected: str | None) -> None:
    assert next_link(header, "http://r:5000/v2/_catalog?n=1") == expected


def test_insecure_selects_plain_http_only_without_a_scheme() -> None:
    assert normalise_endpoint("r.local:5000", insecure=True) == "http://r.local:5000"
    assert normalise_endpoint("https://r.local/", insecure=True) == "https://r.local"
    assert normalise_endpoint("r.local//") == "https://r.local/"


def _load_registry_settings(tmp_path: Path, value: str) -> RegistrySettings:
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = ["registry"]\n\n[plugins.registry]\ntoken_realm_hosts = {value}\n'
    )
    config, _ = load(str(config_file), env={})
    settings = config.plugin("registry")
    assert isinstance(settings, RegistrySettings)
    return settings


def test_token_realm_hosts_is_read_from_the_registry_section(tmp_path: Path) -> None:
    settings = _load_registry_settings(tmp_path, '["auth.docker.io", "Token.Example.COM", "10.0.0.7"]')

    assert settings.realm_hosts() == {"auth.docker.io", "token.example.com", "10.0.0.7"}
    assert RegistrySettings().realm_hosts() == frozenset(), "default: the registry's own origin only"


@pytest.mark.parametrize("entry", ["https://auth.docker.io", "auth.docker.io:443", "*.docker.io", "", "a b"])
def test_a_bad_token_realm_host_names_the_key(tmp_path: Path, entry: str) -> None:
    with pytest.raises(ConfigError, match=r"plugins\.registry\.token_realm_hosts: .*not a host name"):
        _load_registry_settings(tmp_path, f'["auth.docker.io", "{entry}"]')
