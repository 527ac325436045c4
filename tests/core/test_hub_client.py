"""How the hub client (and the push agent's local client) finds its cluster: controller-runtime's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterpulse_core.kube.hub import HubConfigError, hub_client

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:7001"}}]
users: [{name: u, user: {token: from-kubeconfig}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    directory = tmp_path / "sa"
    directory.mkdir()
    (directory / "token").write_text("from-service-account")
    (directory / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    return directory


@pytest.fixture
def in_a_pod(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")


def _token(client: object) -> str:
    return str(client.api_client.configuration.api_key["BearerToken"])  # type: ignore[attr-defined]


def test_in_a_pod_the_service_account_is_used(in_a_pod: None, service_account: Path) -> None:
    client = hub_client(service_account_dir=str(service_account))
    assert client.host == "https://10.0.0.1:443"
    assert _token(client).endswith("from-service-account")


def test_a_kubeconfig_given_or_in_the_environment_wins_over_the_service_account(
    in_a_pod: None, service_account: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    assert hub_client(str(kubeconfig), service_account_dir=str(service_account)).host == "http://127.0.0.1:7001"
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert _token(hub_client(service_account_dir=str(service_account))).endswith("from-kubeconfig")


def test_in_a_pod_without_its_service_account_the_error_names_the_directory(in_a_pod: None, tmp_path: Path) -> None:
    with pytest.raises(HubConfigError, match=r"in-cluster configuration from .*missing.*token file does not exist"):
        hub_client(service_account_dir=str(tmp_path / "missing"))


def test_outside_a_pod_without_a_kubeconfig_the_error_says_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(HubConfigError, match=r"~/.kube/config .*KUBERNETES_SERVICE_HOST is not set"):
        hub_client()
