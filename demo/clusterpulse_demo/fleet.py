"""The embedded demo fleet: emulated hub and managed clusters seeded from ``demo/fleet``."""

from __future__ import annotations

import base64
import contextlib
import string
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml
from clusterpulse_testing.kube_api import KubeAPI
from clusterpulse_testing.tls import loopback_ca

from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.kinds import ResourceKind

FLEET_DIR = Path(__file__).parent / "fleet"
#: The ``${...}`` placeholder of the hub Secrets' ``ca.crt``: the base64 of the emulators' CA.
CA_VARIABLE = "CLUSTER_CA_CRT"


def ca_variables() -> dict[str, str]:
    """The hub samples' CA placeholder filled with this process's loopback CA (what ``KubeAPI(tls=True)`` serves)."""
    return {CA_VARIABLE: base64.b64encode(loopback_ca().ca_pem.encode()).decode()}


@attrs.frozen
class ManagedCluster:
    """One emulated managed cluster of the fleet."""

    name: str
    api: KubeAPI
    #: The bearer token the cluster requires (also its push agent's collector token).
    token: str = ""


@attrs.frozen
class Fleet:
    """A running emulated fleet: the hub and its managed clusters."""

    hub: KubeAPI
    namespace: str
    clusters: tuple[ManagedCluster, ...]


def _documents(path: Path, variables: dict[str, str]) -> list[dict[str, Any]]:
    text = string.Template(path.read_text()).safe_substitute(variables)
    docs: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        docs.extend(doc.get("items") or [] if doc.get("kind") == "List" else [doc])
    return docs


def _folder(path: Path, variables: dict[str, str]) -> list[dict[str, Any]]:
    return [doc for file in sorted(path.glob("*.y*ml")) for doc in _documents(file, variables)]


@contextlib.contextmanager
def running_fleet(
    kinds: Sequence[ResourceKind], fleet_dir: Path = FLEET_DIR, registry_url: str | None = None
) -> Iterator[Fleet]:
    """Start one emulator per managed cluster and a hub with the kinds' CRDs and the samples.

    Each managed cluster serves HTTPS and requires its own bearer token; the ClusterConnection
    endpoints in the hub samples are the clusters' emulator URLs, and their Secrets carry the
    emulators' CA as ``ca.crt`` (verified TLS, as against real clusters). With ``registry_url``
    the hub also gets the sample RegistryConnections, pointing at it.
    """
    spec = yaml.safe_load((fleet_dir / "fleet.yaml").read_text())
    started: list[KubeAPI] = []
    try:
        clusters = []
        variables = ca_variables()
        for entry in spec["clusters"]:
            api = KubeAPI(version=entry.get("version"), require_token=entry.get("token"), tls=True).start()
            started.append(api)
            api.seed(_folder(fleet_dir / entry["objects"], {}))
            clusters.append(ManagedCluster(entry["name"], api, str(entry.get("token") or "")))
            variables[entry["urlVariable"]] = api.url
        hub = KubeAPI(tls=True).start()
        started.append(hub)
        hub.seed([crd_manifest(kind) for kind in kinds])
        hub.seed(_folder(fleet_dir / spec["hub"]["objects"], variables))
        registries = spec.get("registries")
        if registry_url and registries:
            hub.seed(_folder(fleet_dir / registries["objects"], {registries["urlVariable"]: registry_url}))
        yield Fleet(hub, spec["hub"].get("namespace", "clusterpulse"), tuple(clusters))
    finally:
        for api in reversed(started):
            api.stop()
