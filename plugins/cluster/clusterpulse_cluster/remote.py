"""Calls to a managed cluster where "not found" is an answer, not a failure."""

from __future__ import annotations

from typing import Any

from clusterpulse_core.kube.client import CappedList, KubeClient, NotFoundError, decode


def get_optional(client: KubeClient, path: str, timeout: float | None = None, **query: Any) -> Any | None:
    """GET ``path`` through the cluster's breaker; ``None`` when the API answers 404.

    Optional resources (ClusterVersion, Routes, OLM and ClusterOperator types) are absent on
    most clusters. The client does not count a 404 against the breaker: the server answered.
    """
    try:
        return client.get(path, timeout=timeout, **query)
    except NotFoundError:
        return None


def list_optional(
    client: KubeClient, path: str, cap: int, page_size: int, timeout: float | None = None
) -> CappedList[Any] | None:
    """The first ``cap`` objects (decoded) of an optional list, page by page, the rest counted;
    ``None`` when the API answers 404 (see :func:`get_optional`)."""
    try:
        return client.list_capped(path, decode, cap, page_size, timeout=timeout)
    except NotFoundError:
        return None
