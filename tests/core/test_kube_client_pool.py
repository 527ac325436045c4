"""The raw-JSON client's own connection pool, built from the public ``kubernetes`` Configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kubernetes
import pytest
from clusterpulse_testing.servers import free_port

from clusterpulse_core.kube.client import KubeApiError, KubeClient, _bypasses_proxy, make_api_client


def test_a_proxy_in_the_configuration_carries_the_calls_unless_no_proxy_names_the_host(
    kube_api: Callable[..., Any],
) -> None:
    api = kube_api()
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    config = api.api_client().configuration
    config.proxy = dead_proxy
    proxied = KubeClient(kubernetes.client.ApiClient(config), timeout=10)
    with pytest.raises(KubeApiError, match="proxy") as caught:
        proxied.get("/api/v1/namespaces")
    assert caught.value.status == 0
    config.no_proxy = "example.org, 127.0.0.0/8"
    direct = KubeClient(kubernetes.client.ApiClient(config), timeout=10)
    assert direct.get("/api/v1/namespaces")["kind"] == "NamespaceList"


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_is_verified_against_the_configured_ca_and_only_an_explicit_opt_out_skips_it(
    kube_api: Callable[..., Any],
) -> None:
    api = kube_api()
    with pytest.raises(KubeApiError, match="CERTIFICATE_VERIFY_FAILED"):
        KubeClient(make_api_client(api.url), timeout=10).get("/api/v1/namespaces")
    assert KubeClient(make_api_client(api.url, ca_pem=api.ca_pem), timeout=10).get("/api/v1/namespaces")
    assert KubeClient(make_api_client(api.url, verify=False), timeout=10).get("/api/v1/namespaces")


@pytest.mark.parametrize(
    ("url", "no_proxy", "bypass"),
    [
        ("https://api.example.org:6443", "", False),
        ("https://api.example.org:6443", "*", True),
        ("https://api.example.org:6443", "example.org", True),
        ("https://api.example.org:6443", ".example.org", True),
        ("https://api.example.org:6443", "api.example.org:6443", True),
        ("https://api.example.org:6443", "api.example.org:443", False),
        ("https://example.org.evil:6443", "example.org", False),
        ("https://10.1.2.3:6443", "10.0.0.0/8", True),
        ("https://10.1.2.3:6443", "192.168.0.0/16", False),
        ("https://[fd00::1]:6443", "fd00::/8", True),
    ],
)
def test_no_proxy_rules(url: str, no_proxy: str, bypass: bool) -> None:
    assert _bypasses_proxy(url, no_proxy) is bypass
