"""Leader election on a coordination.k8s.io/v1 Lease, against the Kubernetes API emulator."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from clusterpulse_testing.polling import eventually

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.leader import LEASE_NAME, LeaderElector
from clusterpulse_core.runtime.lease import micro_time

NAMESPACE = "clusterpulse"
LEASE_DURATION = 1.0
RENEW_DEADLINE = 0.6
RETRY_PERIOD = 0.1
#: Bound of a wait: fifteen Lease durations (a takeover needs one, plus a retry period).
WAIT = 15 * LEASE_DURATION
MICRO_TIME = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$"


@pytest.fixture
def hub(kube_api: Any) -> Any:
    return kube_api()


@pytest.fixture
def electors(hub: Any) -> Iterator[Callable[..., LeaderElector]]:
    made: list[LeaderElector] = []

    def make(identity: str, **kwargs: Any) -> LeaderElector:
        timings: dict[str, Any] = {
            "lease_duration": LEASE_DURATION,
            "renew_deadline": RENEW_DEADLINE,
            "retry_period": RETRY_PERIOD,
        }
        timings.update(kwargs)
        elector = LeaderElector(KubeClient(hub.api_client()), NAMESPACE, identity, **timings)
        made.append(elector)
        return elector

    yield make
    for elector in made:
        elector.stop(release=False)


def lease(hub: Any) -> dict[str, Any]:
    found = hub.get("coordination.k8s.io/v1", "leases", LEASE_NAME, NAMESPACE)
    assert found is not None
    return found["spec"]


def test_the_first_candidate_creates_the_lease(hub: Any, electors: Any) -> None:
    elector = electors("alpha", lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)
    assert elector.try_acquire_or_renew() is True
    spec = lease(hub)
    assert spec["holderIdentity"] == "alpha"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["acquireTime"] == spec["renewTime"]
    assert re.match(MICRO_TIME, spec["renewTime"]), spec["renewTime"]
    assert spec.get("leaseTransitions", 0) == 0


def test_renewal_keeps_acquire_time_and_moves_renew_time(hub: Any) -> None:
    times = iter([datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC), datetime(2025, 1, 1, 12, 0, 2, 500, tzinfo=UTC)])
    elector = LeaderElector(KubeClient(hub.api_client()), NAMESPACE, "alpha", now=lambda: next(times))
    assert elector.try_acquire_or_renew()
    assert elector.try_acquire_or_renew()
    spec = lease(hub)
    assert spec["acquireTime"] == "2025-01-01T12:00:00.000000Z"
    assert spec["renewTime"] == "2025-01-01T12:00:02.000500Z"
    assert spec.get("leaseTransitions", 0) == 0


def test_a_held_lease_is_not_taken_until_it_expires(hub: Any, electors: Any) -> None:
    clock = [0.0]
    alpha = electors("alpha")
    beta = LeaderElector(
        KubeClient(hub.api_client()),
        NAMESPACE,
        "beta",
        lease_duration=1.0,
        renew_deadline=0.6,
        retry_period=0.1,
        clock=lambda: clock[0],
    )
    assert alpha.try_acquire_or_renew()
    assert beta.try_acquire_or_renew() is False
    clock[0] = 0.9
    assert beta.try_acquire_or_renew() is False, "still within the lease duration"
    clock[0] = 1.0
    assert beta.try_acquire_or_renew() is True
    spec = lease(hub)
    assert spec["holderIdentity"] == "beta"
    assert spec["leaseTransitions"] == 1


def test_a_renewed_lease_stays_with_its_holder(hub: Any, electors: Any) -> None:
    clock = [0.0]
    alpha = electors("alpha")
    beta = LeaderElector(
        KubeClient(hub.api_client()),
        NAMESPACE,
        "beta",
        lease_duration=1.0,
        renew_deadline=0.6,
        retry_period=0.1,
        clock=lambda: clock[0],
    )
    assert alpha.try_acquire_or_renew()
    assert beta.try_acquire_or_renew() is False
    clock[0] = 0.8
    assert alpha.try_acquire_or_renew(), "the holder renews"
    assert beta.try_acquire_or_renew() is False, "beta sees a changed record: the lease restarts"
    clock[0] = 1.5
    assert beta.try_acquire_or_renew() is False
    clock[0] = 1.8
    assert beta.try_acquire_or_renew() is True


def test_a_conflicting_write_loses(hub: Any, electors: Any) -> None:
    alpha = electors("alpha")
    assert alpha.try_acquire_or_renew()
    hub.fail(r"/leases/", status=409, times=1, method="PUT")
    assert alpha.try_acquire_or_renew() is False, "409 means another writer won"
    assert alpha.try_acquire_or_renew() is True


def test_a_racing_create_loses(hub: Any, electors: Any) -> None:
    alpha = electors("alpha")
    hub.fail(r"/leases$", status=409, times=1, method="POST")
    assert alpha.try_acquire_or_renew() is False
    assert hub.get("coordination.k8s.io/v1", "leases", LEASE_NAME, NAMESPACE) is None


def test_a_clean_stop_releases_and_the_other_takes_over(hub: Any, electors: Any) -> None:
    alpha, beta = electors("alpha"), electors("beta", lease_duration=30.0, renew_deadline=20.0)
    alpha.start()
    assert alpha.wait_leader(WAIT)
    beta.start()
    eventually(lambda: lease(hub)["renewTime"] != lease(hub)["acquireTime"], "alpha renews", timeout=WAIT)
    assert not beta.is_leader
    alpha.stop(release=True)
    assert lease(hub).get("holderIdentity", "") == ""
    # beta would wait 30 s for an unreleased lease; a released one it takes at its next retry.
    assert beta.wait_leader(WAIT)
    assert lease(hub)["holderIdentity"] == "beta"


def test_a_crashed_leader_is_replaced_after_the_lease_duration(hub: Any, electors: Any) -> None:
    alpha, beta = electors("alpha"), electors("beta")
    alpha.start()
    assert alpha.wait_leader(WAIT)
    beta.start()
    alpha.stop(release=False)  # like a crash: the lease is left as it was
    assert lease(hub)["holderIdentity"] == "alpha"
    assert beta.wait_leader(WAIT)
    assert lease(hub)["holderIdentity"] == "beta"


def test_a_leader_that_cannot_renew_steps_down(hub: Any, electors: Any) -> None:
    lost = threading.Event()
    started = threading.Event()
    alpha = electors("alpha", on_started_leading=started.set, on_stopped_leading=lost.set)
    alpha.start()
    assert started.wait(WAIT)
    hub.fail(r"/leases/", status=500)
    assert lost.wait(WAIT)
    assert alpha.lost and not alpha.is_leader


def test_timings_must_be_ordered(hub: Any) -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaderElector(KubeClient(hub.api_client()), NAMESPACE, "x", lease_duration=5, renew_deadline=10)


def test_micro_time_has_six_fraction_digits() -> None:
    assert micro_time(datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)) == "2025-03-04T05:06:07.000000Z"
