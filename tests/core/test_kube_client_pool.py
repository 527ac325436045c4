"""The raw-JSON client's own connection pool, built from the public ``kubernetes`` Configuration."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kubernetes
import pytest
from clusterpulse_testing.servers import free_port

from clusterpulse_core.kube.client import (
    MIN_POOL_CONNECTIONS,
    KubeApiError,
    KubeClient,
    _bypasses_proxy,
    make_api_client,
)


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


def test_the_pool_keeps_a_connection_for_each_of_many_concurrent_callers(
    kube_api: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As many callers at once as the hub client serves (workers of every kind, informers, Leases):
    no connection is discarded ("Connection pool is full"), so none pays a new TLS handshake."""
    api = kube_api()
    api.delay(r"^/api/v1/namespaces$", 0.2)  # the calls overlap
    client = KubeClient(make_api_client(api.url, ca_pem=api.ca_pem), timeout=30)
    callers = 40
    start = threading.Barrier(callers)

    def call(_: int) -> str:
        start.wait(30)
        return str(client.get("/api/v1/namespaces")["kind"])

    with caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"), ThreadPoolExecutor(callers) as pool:
        assert set(pool.map(call, range(callers))) == {"NamespaceList"}
    assert callers <= MIN_POOL_CONNECTIONS
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]
