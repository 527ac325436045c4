"""Every remote call has a wall-clock deadline: a server dripping one byte a second, or never
finishing its headers, is cut off at the call's timeout (or the surrounding deadline), not after
minutes; an answer over ``max_bytes`` is refused as soon as it is too big."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from clusterpulse_registry.client import Deadline, RegistryClient
from clusterpulse_testing.hostile import HostileProxy
from clusterpulse_testing.polling import eventually

from clusterpulse_core import deadline
from clusterpulse_core.kube.client import CallDeadlineError, KubeClient, ResponseTooLargeError, make_api_client

SLACK = 1.5  # generous: the machine is shared


@pytest.fixture
def proxy(kube_api: Callable[..., Any]) -> Iterator[HostileProxy]:
    with HostileProxy(kube_api().url) as hostile:
        hostile.drip(r"^/api/v1/nodes", bytes_per_second=2)
        hostile.stall_headers(r"^/api/v1/pods")
        hostile.huge(r"^/api/v1/secrets", 50 * 1024 * 1024)
        hostile.drip(r"^/v2/", bytes_per_second=2)
        yield hostile


def _timed(call: Callable[[], Any]) -> tuple[float, BaseException]:
    started = time.monotonic()
    try:
        call()
    except Exception as exc:
        return time.monotonic() - started, exc
    raise AssertionError("the call did not fail")


def test_a_dripping_body_and_stalled_headers_are_cut_off_at_the_timeout(proxy: HostileProxy) -> None:
    client = KubeClient(make_api_client(proxy.url, ca_pem=proxy.ca_pem), timeout=1.0)
    assert client.get("/api/v1/namespaces")["kind"] == "NamespaceList"
    body_after, body_error = _timed(lambda: client.get("/api/v1/nodes"))
    headers_after, headers_error = _timed(lambda: client.get("/api/v1/pods"))
    with deadline.within(0.3):
        within_after, within_error = _timed(lambda: client.get("/api/v1/nodes"))
    print(
        f"\ndripping body cut after {body_after:.2f}s, stalled headers after {headers_after:.2f}s "
        f"(timeout 1s); under a 0.3s deadline after {within_after:.2f}s"
    )
    for after, error, limit in (
        (body_after, body_error, 1.0),
        (headers_after, headers_error, 1.0),
        (within_after, within_error, 0.3),
    ):
        assert isinstance(error, CallDeadlineError), error
        assert error.status == 0 and "deadline exceeded" in str(error)
        assert limit * 0.9 <= after < limit + SLACK
    assert client.get("/api/v1/namespaces")["kind"] == "NamespaceList"  # the pool still works


def test_an_answer_over_max_bytes_is_refused_early(proxy: HostileProxy) -> None:
    client = KubeClient(make_api_client(proxy.url, ca_pem=proxy.ca_pem), timeout=30.0, max_bytes=4 * 1024 * 1024)
    after, error = _timed(lambda: client.get("/api/v1/secrets"))
    print(f"\n50 MiB answer refused after {after:.2f}s: {error}")
    assert isinstance(error, ResponseTooLargeError)
    assert "over the limit of 4194304 bytes" in str(error)


def test_the_registry_client_has_a_wall_clock_deadline_too(proxy: HostileProxy) -> None:
    client = RegistryClient(proxy.url, verify=False)
    started = time.monotonic()
    result = client.health_check(Deadline(1.0), logging.getLogger("test"))
    after = time.monotonic() - started
    print(f"\ndripping registry given up after {after:.2f}s: {result.error}")
    assert not result.available
    assert "timeout" in result.error
    assert after < 1.0 + SLACK
    client.close()


def test_a_transport_timeout_past_the_deadline_is_the_deadline_even_before_the_watchdog_fires() -> None:
    # Under load urllib3's own read timeout (the same limit) can beat the watchdog thread; the caller
    # must still see DeadlineExceeded. Holding the watchdog's lock keeps it from firing.
    watchdog = deadline.Watchdog()
    with (
        deadline.owned_by(watchdog),
        watchdog._cond,
        pytest.raises(deadline.DeadlineExceeded, match=r"deadline exceeded after 0\.05s") as caught,
        deadline.guard(0.05, "GET /slow") as watch,
    ):
        time.sleep(0.1)
        raise TimeoutError("read timed out")
    assert not watch.fired
    assert isinstance(caught.value.__cause__, TimeoutError)
    # Before the deadline a transport error stays what it is.
    with pytest.raises(TimeoutError), deadline.guard(30.0, "GET /fast"):
        raise TimeoutError("connection reset")


def test_cancelling_one_owners_calls_leaves_another_owners_calls_running(proxy: HostileProxy) -> None:
    """Two managers in one process: the one stopping cuts its own hung calls, not the other's."""
    stopping, surviving = deadline.Watchdog(), deadline.Watchdog()
    client = KubeClient(make_api_client(proxy.url, ca_pem=proxy.ca_pem), timeout=60.0)
    outcome: dict[str, BaseException | None] = {}

    def call(name: str, watchdog: deadline.Watchdog) -> None:
        with deadline.owned_by(watchdog):
            try:
                client.get("/api/v1/nodes")  # the proxy drips it: the call hangs until cut
                outcome[name] = None
            except Exception as exc:
                outcome[name] = exc

    threads = {
        name: threading.Thread(target=call, args=(name, watchdog))
        for name, watchdog in (("stopping", stopping), ("surviving", surviving))
    }
    for thread in threads.values():
        thread.start()
    eventually(lambda: stopping.active == 1 and surviving.active == 1, "both calls in flight", timeout=30.0)
    assert stopping.cancel_all("shutdown") == 1
    threads["stopping"].join(30.0)
    assert "shutdown" in str(outcome["stopping"])
    assert surviving.active == 1 and "surviving" not in outcome, "the other owner's call was cut too"
    assert surviving.cancel_all("test over") == 1
    threads["surviving"].join(30.0)
    assert isinstance(outcome["surviving"], CallDeadlineError) and "test over" in str(outcome["surviving"])
