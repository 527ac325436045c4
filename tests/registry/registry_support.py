"""Shared helpers of the tests in this folder (classes, constants, builders; fixtures are in conftest.py)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_testing.servers import ServerProcess, ServerUnavailable
from registry_servers import TokenIssuer

from clusterpulse_core.context import Runtime
from clusterpulse_core.runtime.bootstrap import Outcome, reconcile_object

NAMESPACE = "clusterpulse"


USERNAME = "monitor"


PASSWORD = "correct-horse"


REPOSITORIES = ("library/alpine", "team/api", "team/web")


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


def start_or_fail(process: ServerProcess) -> None:
    try:
        process.start()
    except ServerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@attrs.frozen
class TokenRegistry:
    """A docker-registry with token authentication and its token issuer."""

    registry: RunningRegistry
    issuer: TokenIssuer


def secret_object(name: str, data: Mapping[str, str], namespace: str = NAMESPACE) -> dict[str, Any]:
    """A Secret with ``data`` base64-encoded."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


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
        obj: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": "RegistryConnection",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": dict(spec),
        }
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


def fixed_clock(moment: datetime) -> Callable[[], datetime]:
    """A clock that always says ``moment``."""
    return lambda: moment
