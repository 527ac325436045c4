"""The hub client, found as controller-runtime finds its cluster: kubeconfig, else in-cluster."""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.incluster_config import SERVICE_HOST_ENV_NAME, InClusterConfigLoader

from clusterpulse_core.kube.client import DEFAULT_MAX_RESPONSE_BYTES, KubeClient

#: Where Kubernetes mounts a pod's service account (``token``, ``ca.crt``, ``namespace``).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class HubConfigError(Exception):
    """No usable hub configuration was found."""


def hub_client(
    kubeconfig: str = "",
    timeout: float = 30.0,
    max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    service_account_dir: str = SERVICE_ACCOUNT_DIR,
) -> KubeClient:
    """A client for the cluster this process runs against (the hub; the push agent's own cluster).

    ``kubeconfig`` when given, else ``$KUBECONFIG``, else the pod's service account
    (``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT`` over HTTPS, with the ``token`` and
    ``ca.crt`` of ``service_account_dir``), else ``~/.kube/config``: controller-runtime's order.
    """
    configuration = Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG", "")
    if not path and os.environ.get(SERVICE_HOST_ENV_NAME):
        directory = Path(service_account_dir)
        try:
            InClusterConfigLoader(
                token_filename=str(directory / "token"), cert_filename=str(directory / "ca.crt")
            ).load_and_set(configuration)
        except (kube_config.ConfigException, OSError) as exc:
            raise HubConfigError(f"in-cluster configuration from {directory}: {exc}") from exc
    else:
        try:
            kube_config.load_kube_config(config_file=path or None, client_configuration=configuration)
        except (kube_config.ConfigException, OSError) as exc:
            raise HubConfigError(
                f"cannot configure the client from {path or '~/.kube/config'} (and "
                f"{SERVICE_HOST_ENV_NAME} is not set, so not in-cluster either): {exc}"
            ) from exc
    return KubeClient(ApiClient(configuration), name="hub", timeout=timeout, max_bytes=max_bytes)
