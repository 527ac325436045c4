"""Fixtures of the registry plugin tests: real docker-registry servers and an emulated hub."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
import requests
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from registry_pki import Pki, make_pki
from registry_servers import RegistryAuth, TokenIssuer, push_image, registry_process

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.pieces import Piece
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import Outcome, build_runtime, reconcile_object
from clusterpulse_core.testing.servers import ServerProcess, ServerUnavailable, require_binary

NAMESPACE = "clusterpulse"
USERNAME = "monitor"
PASSWORD = "correct-horse"
REPOSITORIES = ("library/alpine", "team/api", "team/web")


# --------------------------------------------------------------------------- registries


@attrs.frozen
class RunningRegistry:
    """A docker-registry started for the tests: its process, URL and what was pushed to it."""

    process: ServerProcess
    scheme: str = "http"
    repositories: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """``<scheme>://127.0.0.1:<port>``."""
        return f"{self.scheme}://127.0.0.1:{self.process.port}"

    @property
    def storage(self) -> Path:
        """The registry's filesystem storage."""
        return self.process.workdir / "data"


def _start(process: ServerProcess) -> None:
    try:
        process.start()
    except ServerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


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
    process = registry_process(docker_registry_binary, RegistryAuth(htpasswd={USERNAME: PASSWORD}))
    _start(process)
    with requests.Session() as session:
        session.auth = (USERNAME, PASSWORD)
        for repository in REPOSITORIES:
            push_image(session, f"http://127.0.0.1:{process.port}", repository)
    yield RunningRegistry(process, "http", REPOSITORIES)
    process.cleanup()


@pytest.fixture
def docker_registry(docker_registry_session: RunningRegistry) -> Iterator[RunningRegistry]:
    """The htpasswd registry, running (a test may stop it; it is started again afterwards)."""
    _start(docker_registry_session.process)
    yield docker_registry_session
    _start(docker_registry_session.process)


@pytest.fixture(scope="session")
def docker_registry_tls(docker_registry_binary: str, pki: Pki) -> Iterator[RunningRegistry]:
    """An anonymous docker-registry serving HTTPS with a certificate from the test CA."""
    process = registry_process(docker_registry_binary, RegistryAuth(), tls=(pki.server_cert, pki.server_key))
    _start(process)
    yield RunningRegistry(process, "https")
    process.cleanup()


@pytest.fixture(scope="session")
def docker_registry_paged(docker_registry_binary: str,
                          docker_registry_session: RunningRegistry) -> Iterator[RunningRegistry]:
    """An anonymous registry serving the htpasswd registry's repositories one catalog entry per page."""
    process = registry_process(docker_registry_binary, RegistryAuth(), storage=docker_registry_session.storage,
                               catalog_page_size=1)
    _start(process)
    yield RunningRegistry(process, "http", REPOSITORIES)
    process.cleanup()


@attrs.frozen
class TokenRegistry:
    """A docker-registry with token authentication and its token issuer."""

    registry: RunningRegistry
    issuer: TokenIssuer


@pytest.fixture(scope="session")
def token_registry(docker_registry_binary: str, docker_registry_session: RunningRegistry,
                   pki: Pki) -> Iterator[TokenRegistry]:
    """A registry answering ``401 Bearer realm=...``, serving the htpasswd registry's repositories."""
    issuer = TokenIssuer(pki.signing_key, {USERNAME: PASSWORD}).start()
    process = registry_process(
        docker_registry_binary, RegistryAuth(token_realm=issuer.realm, token_cert=pki.signing_cert),
        storage=docker_registry_session.storage)
    _start(process)
    yield TokenRegistry(RunningRegistry(process, "http", REPOSITORIES), issuer)
    process.cleanup()
    issuer.stop()


# --------------------------------------------------------------------------- hub side


class RecordingBackend:
    """A storage backend keeping every piece it receives, in order."""

    name = "recorder"

    def __init__(self) -> None:
        self.pieces: list[Piece] = []

    def store(self, pieces: Sequence[Piece]) -> None:
        """Keep the pieces."""
        self.pieces.extend(pieces)

    def ready(self) -> str | None:
        """Always ready."""
        return None

    def close(self) -> None:
        """Nothing to release."""

    def of_type(self, cls: type) -> list[Any]:
        """The kept pieces of one type."""
        return [piece for piece in self.pieces if isinstance(piece, cls)]


class RecorderPlugin:
    """Provides a :class:`RecordingBackend` through the store hook."""

    def __init__(self) -> None:
        self.backend = RecordingBackend()

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[RecordingBackend]:
        """The recording backend."""
        return [self.backend]


def secret_object(name: str, data: Mapping[str, str], namespace: str = NAMESPACE) -> dict[str, Any]:
    """A Secret with ``data`` base64-encoded."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque", "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


class RegistryHub:
    """The emulated hub with the RegistryConnection CRD, and a runtime running the registry plugin."""

    def __init__(self, api: Any, runtime: Runtime) -> None:
        self.api = api
        self.runtime = runtime

    @property
    def api_version(self) -> str:
        """``clusterpulse.io/v1alpha1``."""
        return REGISTRY_CONNECTION.api_version

    def secret(self, name: str, username: str, password: str) -> None:
        """Create a Secret with ``username`` and ``password``."""
        self.api.create(secret_object(name, {"username": username, "password": password}))

    def create(self, name: str, spec: Mapping[str, Any], status: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Create a RegistryConnection."""
        obj: dict[str, Any] = {"apiVersion": self.api_version, "kind": "RegistryConnection",
                               "metadata": {"name": name, "namespace": NAMESPACE}, "spec": dict(spec)}
        if status is not None:
            obj["status"] = dict(status)
        return dict(self.api.create(obj))

    def get(self, name: str) -> dict[str, Any]:
        """The stored RegistryConnection."""
        obj = self.api.get(self.api_version, "RegistryConnection", name, NAMESPACE)
        assert obj is not None, f"RegistryConnection {name} not found"
        return dict(obj)

    def status(self, name: str) -> dict[str, Any]:
        """Its status."""
        return dict(self.get(name).get("status") or {})

    def reconcile(self, name: str) -> Outcome:
        """Reconcile the object as it is stored now."""
        return reconcile_object(self.runtime, "registry", REGISTRY_CONNECTION, self.get(name))

    def delete(self, name: str) -> Outcome:
        """Delete the object and let the plugin forget it."""
        last = self.api.delete(self.api_version, "registryconnections", name, NAMESPACE)
        assert last is not None
        last["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
        return reconcile_object(self.runtime, "registry", REGISTRY_CONNECTION, last)


@pytest.fixture
def make_hub(kube_api: Callable[..., Any]) -> Iterator[Callable[..., RegistryHub]]:
    """``make_hub(plugins=[...], extra={...}, settings={...})``: an emulated hub and a runtime on it.

    The registry plugin is loaded through its entry point unless ``extra`` provides it.
    """
    runtimes: list[Runtime] = []

    def factory(names: Sequence[str] = ("registry",), extra: Mapping[str, object] | None = None,
                settings: Mapping[str, Any] | None = None) -> RegistryHub:
        from clusterpulse_core.crds import crd_manifest

        api = kube_api()
        api.create(crd_manifest(REGISTRY_CONNECTION))
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        host = PluginHost(list(names), extra=extra)
        enabled = tuple(host.order)
        config = Config(core=CoreSettings(plugins=enabled, namespace=NAMESPACE),
                        plugins={name: (settings or {}).get(name) for name in enabled})
        host.configure(config)
        runtime = build_runtime(config, host, hub=KubeClient(api.api_client(), timeout=10))
        runtimes.append(runtime)
        return RegistryHub(api, runtime)

    yield factory
    from clusterpulse_core.runtime.bootstrap import stop_plugins

    for runtime in runtimes:
        stop_plugins(runtime)


@pytest.fixture
def recorder() -> RecorderPlugin:
    """A fresh recording storage plugin."""
    return RecorderPlugin()


@pytest.fixture
def hub(make_hub: Callable[..., RegistryHub], recorder: RecorderPlugin) -> RegistryHub:
    """A hub running the registry plugin (entry point) with a recording storage backend."""
    return make_hub(extra={"recorder": recorder})


def fixed_clock(moment: datetime) -> Callable[[], datetime]:
    """A clock that always says ``moment``."""
    return lambda: moment
