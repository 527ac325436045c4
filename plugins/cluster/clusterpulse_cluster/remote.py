"""Calls to a managed cluster where "not found" is an answer, not a failure."""

from __future__ import annotations

from typing import Any

from clusterpulse_core.kube.client import KubeClient, NotFoundError


def get_optional(client: KubeClient, path: str, timeout: float | None = None, **query: Any) -> Any | None:
    """GET ``path`` through the cluster's breaker; ``None`` when the API answers 404.

    Optional resources (ClusterVersion, Routes, OLM and ClusterOperator types) are absent on
    most clusters. The client does not count a 404 against the breaker: the server answered.
    """
    try:
        return client.get(path, timeout=timeout, **query)
    except NotFoundError:
        return None
