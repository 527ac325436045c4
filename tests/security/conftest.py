"""Fixtures of the security tests: a hub reconciling ClusterConnections in-process, on real Redis."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from security_support import ClusterHub, make_cluster_hub


@pytest.fixture
def cluster_hub(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Iterator[ClusterHub]:
    """A hub emulator and a runtime with the redis and cluster plugins reconciling on it."""
    made = make_cluster_hub(kube_api, redis_url, tmp_path)
    yield made
    made.close()
