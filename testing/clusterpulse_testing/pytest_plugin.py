"""pytest fixtures for ClusterPulse plugins: real servers on loopback ports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from clusterpulse_testing.servers import (
    RedisClusterProcesses,
    ServerProcess,
    ServerUnavailable,
    redis_process,
    require_binary,
)


def pytest_configure(config: pytest.Config) -> None:
    """Declare the markers the harness uses."""
    config.addinivalue_line("markers", "vectors(file, group): data-driven test over a shared vector group")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--vector-groups-out FILE``: write the vector groups the collected tests claim."""
    parser.addoption("--vector-groups-out", default=None, help="write claimed vector groups (file group) here")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Write the claimed vector groups when asked (used by the vector coverage check)."""
    out = session.config.getoption("--vector-groups-out")
    if not out:
        return
    claimed = set()
    for item in session.items:
        for mark in item.iter_markers("vectors"):
            if len(mark.args) == 2:
                claimed.add(f"{mark.args[0]} {mark.args[1]}")
    with open(out, "w") as fh:
        fh.write("\n".join(sorted(claimed)) + "\n")


@pytest.fixture(scope="session")
def redis_server_process() -> Iterator[ServerProcess]:
    """One real redis-server for the test session (use ``redis_server`` in tests)."""
    binary = require_binary("redis-server", "redis-server")
    server = redis_process(binary)
    try:
        server.start()
    except ServerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.cleanup()


@pytest.fixture
def redis_server(redis_server_process: ServerProcess) -> Iterator[ServerProcess]:
    """A running, empty redis-server (``.port``; ``.stop()``/``.start()`` to simulate an outage)."""
    import redis

    redis_server_process.start()
    client = redis.Redis(host="127.0.0.1", port=redis_server_process.port)
    client.flushall()
    client.close()
    yield redis_server_process
    redis_server_process.start()


@pytest.fixture
def redis_url(redis_server: ServerProcess) -> str:
    """``redis://127.0.0.1:<port>/0`` of the per-test empty redis-server."""
    return f"redis://127.0.0.1:{redis_server.port}/0"


@pytest.fixture(scope="session")
def redis_cluster_processes() -> Iterator[RedisClusterProcesses]:
    """One real three-node Redis Cluster for the test session (use ``redis_cluster`` in tests)."""
    cluster = RedisClusterProcesses(
        require_binary("redis-server", "redis-server"), require_binary("redis-cli", "redis-tools")
    )
    try:
        cluster.start()
    except ServerUnavailable as exc:
        cluster.cleanup()
        pytest.fail(str(exc), pytrace=False)
    yield cluster
    cluster.cleanup()


@pytest.fixture
def redis_cluster(redis_cluster_processes: RedisClusterProcesses) -> RedisClusterProcesses:
    """A running, empty three-node Redis Cluster (``.url`` is ``redis+cluster://...``)."""
    redis_cluster_processes.wait_ok()
    redis_cluster_processes.flush()
    return redis_cluster_processes


@pytest.fixture
def kube_api() -> Iterator[Any]:
    """A factory of Kubernetes API emulators: ``kube_api(objects=[...])`` (keyword arguments go to ``KubeAPI``).

    Each call starts one emulated cluster on a free loopback port; all are stopped after
    the test. The real ``kubernetes`` client talks to them over HTTPS with this process's
    loopback CA (``api.ca_pem``, what a credentials Secret's ``ca.crt`` holds), as to a real API
    server; ``tls=False`` serves plain HTTP.
    """
    from clusterpulse_testing.kube_api import KubeAPI

    started: list[KubeAPI] = []

    def factory(objects: Any = (), **kwargs: Any) -> KubeAPI:
        kwargs.setdefault("tls", True)
        api = KubeAPI(**kwargs).start()
        started.append(api)
        if objects:
            api.seed(objects)
        return api

    yield factory
    for api in started:
        api.stop()


@pytest.fixture
def clusterpulse_manager(tmp_path: Any) -> Iterator[Any]:
    """A factory of in-process ClusterPulse managers: ``clusterpulse_manager(["redis", "mykind"], hub,
    redis_url=redis_url)`` -> a started :class:`~clusterpulse_testing.harness.Harness`.

    The real manager, with the plugins loaded by name through the real config loader, watching the
    ``hub`` emulator (from ``kube_api``) and recording every piece it stores; the keyword arguments
    are :func:`~clusterpulse_testing.harness.running_manager`'s. Every manager started is
    stopped after the test.
    """
    import contextlib

    from clusterpulse_testing.harness import Harness, running_manager

    with contextlib.ExitStack() as stack:
        count = 0

        def factory(plugins: Any, hub: Any, **kwargs: Any) -> Harness:
            nonlocal count
            count += 1
            kwargs.setdefault("directory", tmp_path / f"clusterpulse-manager-{count}")
            kwargs["directory"].mkdir(parents=True, exist_ok=True)
            return stack.enter_context(running_manager(plugins, hub, **kwargs))

        yield factory
