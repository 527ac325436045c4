"""Finding 7: whoever creates a ClusterConnection or RegistryConnection chooses the endpoint and the
Secret the hub sends there. With ``endpoint_allow_list`` the endpoint must name an allowed host;
with ``require_secret_label`` the Secret must carry ``clusterpulse.io/credentials: "true"``.
The hostile endpoints are real API emulators on loopback that record every request: a refused
object must not reach them at all."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from security_support import NAMESPACE, TOKEN, ClusterHub, make_cluster_hub, managed_objects, secret

from clusterpulse_core.config import ConfigError, CoreSettings, build_settings
from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.kube.credentials import CREDENTIALS_LABEL, CredentialsPolicy, EndpointNotAllowedError
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, stop_plugins

LABELLED = {CREDENTIALS_LABEL: "true"}


@pytest.fixture
def make_hub(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Iterator[Callable[[str], ClusterHub]]:
    made: list[ClusterHub] = []

    def factory(core: str) -> ClusterHub:
        directory = tmp_path / str(len(made))
        directory.mkdir()
        hub = make_cluster_hub(kube_api, redis_url, directory, core)
        made.append(hub)
        return hub

    yield factory
    for hub in made:
        hub.close()


def test_an_endpoint_outside_the_allow_list_is_refused_before_any_request(
    make_hub: Callable[[str], ClusterHub], kube_api: Callable[..., Any]
) -> None:
    target = kube_api(objects=managed_objects(), require_token=TOKEN)
    refusing = make_hub('endpoint_allow_list = ["10.0.0.0/8", "*.clusters.example.com"]')
    refusing.add("east", target.url, {"token": TOKEN, "ca.crt": target.ca_pem})
    status = refusing.reconcile("east")
    assert status["phase"] == "Error"
    assert "spec.endpoint: host '127.0.0.1' is not in clusterpulse.endpoint_allow_list" in status["message"]
    assert target.requests == [], "the hub sent a request (and its token) to an endpoint it does not allow"
    secret_reads = [r for r in refusing.hub.requests if "/secrets/" in r[1]]
    assert secret_reads == [], "the Secret was read for an endpoint that is not allowed"

    allowing = make_hub('endpoint_allow_list = ["127.0.0.0/8"]')
    allowing.add("east", target.url, {"token": TOKEN, "ca.crt": target.ca_pem})
    assert allowing.reconcile("east")["phase"] == "Connected"
    assert target.requests


def test_a_secret_without_the_opt_in_label_is_never_sent(
    make_hub: Callable[[str], ClusterHub], kube_api: Callable[..., Any]
) -> None:
    target = kube_api(objects=managed_objects(), require_token=TOKEN)
    hub = make_hub("require_secret_label = true")
    hub.add("east", target.url, {"token": TOKEN, "ca.crt": target.ca_pem})
    hub.add("west", target.url, {"token": TOKEN, "ca.crt": target.ca_pem}, labels={CREDENTIALS_LABEL: "false"})
    for name in ("east", "west"):
        status = hub.reconcile(name)
        assert status["phase"] == "Error"
        assert f"does not carry the label {CREDENTIALS_LABEL}=true" in status["message"], status["message"]
    assert target.requests == [], "the token of an unlabelled Secret reached the endpoint"

    hub.add("north", target.url, {"token": TOKEN, "ca.crt": target.ca_pem}, labels=LABELLED)
    assert hub.reconcile("north")["phase"] == "Connected"
    # Off (the default, as the Go controller): an unlabelled Secret is used.
    lenient = make_hub("")
    lenient.add("east", target.url, {"token": TOKEN, "ca.crt": target.ca_pem})
    assert lenient.reconcile("east")["phase"] == "Connected"


def test_a_registry_endpoint_outside_the_allow_list_is_refused(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    target = kube_api()  # records every request: the registry check must send none
    hub = kube_api()
    hub.create(crd_manifest(REGISTRY_CONNECTION))
    hub.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    hub.create(secret("registry-auth", {"username": "u", "password": "p"}, labels=LABELLED))
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        f'[clusterpulse]\nplugins = ["redis", "registry"]\nnamespace = "{NAMESPACE}"\n'
        f'endpoint_allow_list = ["registry.example.com"]\nrequire_secret_label = true\n'
        f'[plugins.redis]\nurl = "{redis_url}"\n'
    )
    config, host = load(str(config_file), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    try:
        obj = hub.create(
            {
                "apiVersion": REGISTRY_CONNECTION.api_version,
                "kind": "RegistryConnection",
                "metadata": {"name": "quay", "namespace": NAMESPACE},
                "spec": {"endpoint": target.url, "credentialsRef": {"name": "registry-auth"}},
            }
        )
        reconcile_object(runtime, "registry", REGISTRY_CONNECTION, obj)
        status = hub.get(REGISTRY_CONNECTION.api_version, "RegistryConnection", "quay", NAMESPACE)["status"]
        assert status["phase"] == "Error"
        assert "spec.endpoint: host '127.0.0.1' is not in clusterpulse.endpoint_allow_list" in status["message"]
        assert target.requests == []
    finally:
        stop_plugins(runtime)
        runtime.store.close()


@pytest.mark.parametrize(
    ("entries", "endpoint", "allowed"),
    [
        (("api.example.com",), "https://API.example.com:6443", True),
        (("api.example.com",), "https://api.example.com.evil.test", False),
        (("*.example.com",), "https://east.example.com", True),
        (("*.example.com",), "https://example.com", False),
        (("*.example.com",), "https://east.example.com@evil.test/", False),
        (("10.0.0.0/8",), "https://10.1.2.3:6443", True),
        (("10.0.0.0/8",), "https://11.1.2.3", False),
        (("10.0.0.0/8",), "https://10.example.com", False),
        (("fd00::/8",), "https://[fd00::1]:6443", True),
        (("192.0.2.7",), "192.0.2.7:443", True),
        ((), "https://anything.example", True),
    ],
)
def test_allow_list_entries(entries: tuple[str, ...], endpoint: str, allowed: bool) -> None:
    policy = CredentialsPolicy(entries)
    if allowed:
        policy.check_endpoint(endpoint)
    else:
        with pytest.raises(EndpointNotAllowedError, match=r"spec\.endpoint: host"):
            policy.check_endpoint(endpoint)


def test_a_bad_allow_list_entry_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"clusterpulse\.endpoint_allow_list: .*'10\.0\.0\.0/33'"):
        build_settings(CoreSettings, {"endpoint_allow_list": ["10.0.0.0/33"]}, "clusterpulse", {})
    with pytest.raises(ConfigError, match=r"clusterpulse\.endpoint_allow_list: expected a host name"):
        build_settings(CoreSettings, {"endpoint_allow_list": ["https://x"]}, "clusterpulse", {})
