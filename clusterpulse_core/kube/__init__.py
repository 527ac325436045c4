"""Kubernetes access: raw-JSON clients, credentials, the client pool."""

from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError

__all__ = ["KubeApiError", "KubeClient", "NotFoundError"]
