"""Registries that answer wrongly or not at all, and product detection from headers."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from registry_scripted import ScriptedRegistry
from registry_support import RegistryHub


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An address that accepts TCP connections (kernel backlog) but never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def scripted() -> Iterator[list[ScriptedRegistry]]:
    """Scripted plain-HTTP registries started by a test (stopped afterwards)."""
    started: list[ScriptedRegistry] = []
    yield started
    for server in started:
        server.stop()


def test_no_answer_within_the_timeout_is_unhealthy(hub: RegistryHub, silent_endpoint: str) -> None:
    hub.create("silent", {"endpoint": silent_endpoint, "monitoring": {"timeout": 1}})

    outcome = hub.reconcile("silent")

    assert not outcome.ok
    status = hub.status("silent")
    assert (status["phase"], status["health"], status["available"]) == ("Error", "unhealthy", False)
    assert status["message"] == f'Registry unavailable: request failed: Get "{silent_endpoint}/v2/": timeout after 1s'


def test_other_status_codes_are_unexpected(hub: RegistryHub, scripted: list[ScriptedRegistry]) -> None:
    server = ScriptedRegistry(
        {"GET /v2/": {"status": 503, "headers": {"Docker-Distribution-Api-Version": "registry/2.0"}}}
    ).start()
    scripted.append(server)
    hub.create("broken", {"endpoint": server.url + "/"})

    outcome = hub.reconcile("broken")

    assert outcome.detail == "Registry unavailable: unexpected status code: 503"
    status = hub.status("broken")
    assert (status["phase"], status["available"]) == ("Error", False)
    assert "version" not in status, "headers are not read from a failing answer"


def test_products_and_features_are_detected_from_headers(hub: RegistryHub, scripted: list[ScriptedRegistry]) -> None:
    headers = {
        "Docker-Distribution-Api-Version": "registry/2.0",
        "Server": "Harbor",
        "Docker-Content-Digest": "sha256:0",
        "Link": '</v2/_catalog?last=a>; rel="next"',
    }
    server = ScriptedRegistry({"GET /v2/": {"status": 200, "headers": headers}}).start()
    scripted.append(server)
    hub.create("harbor", {"endpoint": server.url, "type": "harbor"})

    assert hub.reconcile("harbor").ok

    assert hub.status("harbor")["features"] == {
        "docker_v2_api": True,
        "harbor_detected": True,
        "content_digest": True,
        "pagination": True,
    }
