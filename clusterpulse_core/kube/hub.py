"""The hub client: kubeconfig (explicit, ``$KUBECONFIG`` or ``~/.kube/config``) or in-cluster."""

from __future__ import annotations

import os

from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration

from clusterpulse_core.kube.client import DEFAULT_MAX_RESPONSE_BYTES, KubeClient


class HubConfigError(Exception):
    """No usable hub configuration was found."""


def hub_client(kubeconfig: str = "", timeout: float = 30.0, max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> KubeClient:
    """A client for the hub cluster."""
    configuration = Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG", "")
    try:
        if path or os.path.exists(os.path.expanduser("~/.kube/config")):
            kube_config.load_kube_config(config_file=path or None, client_configuration=configuration)
        else:
            kube_config.load_incluster_config(client_configuration=configuration)
    except (kube_config.ConfigException, OSError) as exc:
        raise HubConfigError(f"cannot configure the hub client: {exc}") from exc
    return KubeClient(ApiClient(configuration), name="hub", timeout=timeout, max_bytes=max_bytes)
