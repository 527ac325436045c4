"""Fixtures of the registry plugin tests: real docker-registry servers and an emulated hub."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
import requests
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend
from clusterpulse_testing.servers import require_binary
from registry_pki import Pki, make_pki
from registry_servers import RegistryAuth, TokenIssuer, push_image, registry_process
from registry_support import (
    NAMESPACE,
    PASSWORD,
    REPOSITORIES,
    USERNAME,
    RegistryHub,
    RunningRegistry,
    TokenRegistry,
    start_or_fail,
)

from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A test CA with a server certificate for 127.0.0.1, localhost and registry.example.com."""
    return make_pki(tmp_path_factory.mktemp("registry-pki"))


@pytest.fixture(scope="session")
def docker_registry_binary() -> str:
    """The docker-registry binary (fails with the apt command when missing)."""
    return require_binary("docker-registry", "docker-registry")


@pytest.fixture(scope="session")
def docker_registry_session(docker_registry_binary: str) -> Iterator[RunningRegistry]:
    """One plain-HTTP docker-registry with htpasswd (bcrypt) auth and three pushed repositories."""
    process = registry_process(docker_registry_binary, RegistryAuth(htpasswd={USERNAME: PASSWORD}), access_log=True)
    start_or_fail(process)
    with requests.Session() as session:
        session.auth = (USERNAME, PASSWORD)
        for repository in REPOSITORIES:
            push_image(session, f"http://127.0.0.1:{process.port}", repository)
    yield RunningRegistry(process, "http", REPOSITORIES)
    process.cleanup()


@pytest.fixture
def docker_registry(docker_registry_session: RunningRegistry) -> Iterator[RunningRegistry]:
    """The htpasswd registry, running (a test may stop it; it is started again afterwards)."""
    start_or_fail(docker_registry_session.process)
    yield docker_registry_session
    start_or_fail(docker_registry_session.process)


@pytest.fixture(scope="session")
def docker_registry_tls(docker_registry_binary: str, pki: Pki) -> Iterator[RunningRegistry]:
    """An anonymous docker-registry serving HTTPS with a certificate from the test CA."""
    process = registry_process(docker_registry_binary, RegistryAuth(), tls=(pki.server_cert, pki.server_key))
    start_or_fail(process)
    yield RunningRegistry(process, "https")
    process.cleanup()


@pytest.fixture(scope="session")
def docker_registry_paged(
    docker_registry_binary: str, docker_registry_session: RunningRegistry
) -> Iterator[RunningRegistry]:
    """An anonymous registry serving the htpasswd registry's repositories one catalog entry per page."""
    process = registry_process(
        docker_registry_binary, RegistryAuth(), storage=docker_registry_session.storage, catalog_page_size=1
    )
    start_or_fail(process)
    yield RunningRegistry(process, "http", REPOSITORIES)
    process.cleanup()


@pytest.fixture(scope="session")
def token_registry(
    docker_registry_binary: str, docker_registry_session: RunningRegistry, pki: Pki
) -> Iterator[TokenRegistry]:
    """A registry answering ``401 Bearer realm=...``, serving the htpasswd registry's repositories."""
    issuer = TokenIssuer(pki.signing_key, {USERNAME: PASSWORD}).start()
    process = registry_process(
        docker_registry_binary,
        RegistryAuth(token_realm=issuer.realm, token_cert=pki.signing_cert),
        storage=docker_registry_session.storage,
    )
    start_or_fail(process)
    yield TokenRegistry(RunningRegistry(process, "http", REPOSITORIES), issuer)
    process.cleanup()
    issuer.stop()


@pytest.fixture
def make_hub(kube_api: Callable[..., Any]) -> Iterator[Callable[..., RegistryHub]]:
    """``make_hub(plugins=[...], extra={...}, settings={...})``: an emulated hub and a runtime on it.

    The registry plugin is loaded through its entry point unless ``extra`` provides it.
    """
    runtimes: list[Runtime] = []

    def factory(
        names: Sequence[str] = ("registry",),
        extra: Mapping[str, object] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> RegistryHub:
        from clusterpulse_core.crds import crd_manifest

        api = kube_api()
        api.create(crd_manifest(REGISTRY_CONNECTION))
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        host = PluginHost(list(names), extra=extra)
        enabled = tuple(host.order)
        config = Config(
            core=CoreSettings(plugins=enabled, namespace=NAMESPACE),
            plugins={name: (settings or {}).get(name) for name in enabled},
        )
        host.configure(config)
        runtime = build_runtime(config, host, hub=KubeClient(api.api_client(), timeout=10))
        runtimes.append(runtime)
        return RegistryHub(api, runtime)

    yield factory
    from clusterpulse_core.runtime.bootstrap import stop_plugins

    for runtime in runtimes:
        stop_plugins(runtime)


@pytest.fixture
def recorder() -> BackendPlugin:
    """A fresh recording storage plugin."""
    return BackendPlugin(RecordingBackend("recorder"))


@pytest.fixture
def hub(make_hub: Callable[..., RegistryHub], recorder: BackendPlugin) -> RegistryHub:
    """A hub running the registry plugin (entry point) with a recording storage backend."""
    return make_hub(extra={"recorder": recorder})
