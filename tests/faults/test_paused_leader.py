"""A leader paused past its Lease (SIGSTOP) and resumed writes nothing: the write fence holds.

Two managers with leader election run as subprocesses. The leader is stopped in the middle of
a reconcile (the managed cluster answers node lists after 1.5 s); the standby takes the Lease
over; ClusterConnections created meanwhile reach the old leader's informer the moment it
resumes. The hub answers Lease calls slowly (0.6 s), so the old leader's workers finish their
reconciles before its elector thread can notice the loss: only the fence stops their writes.
The hub emulator records every write with the writer's User-Agent
(``clusterpulse/<identity>``).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from clusterpulse_testing.polling import STARTUP
from fault_support import (
    CC_API,
    HUB_NAMESPACE,
    TOKEN,
    WAIT,
    ManagerProcess,
    add_cluster,
    make_hub,
    managed_objects,
    write_config,
)

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.runtime.leader import LEASE_NAME

LEASE_DELAY = 0.6  # the hub's injected delay on every Lease call
NODES_DELAY = 1.5  # the managed cluster's injected delay on node lists: a reconcile is in flight that long
# Every Lease call is bounded by half the renew deadline (3 s here, five times the injected delay): a
# loaded machine slows the elector without making it lose a Lease it holds.
TIMINGS = {"leader_elect": True, "lease_duration": 8.0, "renew_deadline": 6.0, "retry_period": 0.5}
#: One Lease call at most (the elector's own bound: half the renew deadline).
LEASE_CALL = TIMINGS["renew_deadline"] / 2
#: An expired Lease taken over: the standby sees the last renewal (one read, up to a retry period
#: late), waits the lease duration from then, and at its next try (a retry period) reads and
#: writes the Lease (two bounded calls).
TAKEOVER = TIMINGS["lease_duration"] + 2 * TIMINGS["retry_period"] + 3 * LEASE_CALL
#: One reconcile of a cluster: its calls are bounded by ``request_timeout`` (WAIT), the node list is slowed.
RECONCILE = WAIT + NODES_DELAY


def _holder(hub: Any) -> str:
    lease = hub.get("coordination.k8s.io/v1", "leases", LEASE_NAME, HUB_NAMESPACE)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def _phase(hub: Any, name: str) -> str:
    return str((hub.get(CC_API, "clusterconnections", name, HUB_NAMESPACE).get("status") or {}).get("phase"))


@pytest.mark.slow
def test_a_resumed_leader_that_lost_the_lease_writes_nothing(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api)
    hub.delay(r"/leases", LEASE_DELAY)
    cluster = kube_api(objects=managed_objects("node-a"), require_token=TOKEN)
    cluster.delay(r"^/api/v1/nodes", NODES_DELAY)
    in_flight = kube_api(objects=managed_objects("node-b"), require_token=TOKEN)
    in_flight.delay(r"^/api/v1/nodes", NODES_DELAY)
    add_cluster(hub, "first", cluster.url)
    config = write_config(tmp_path / "config.toml", redis_url, core=TIMINGS)
    redis_client = redis.Redis.from_url(redis_url)
    leader = ManagerProcess(config, hub, tmp_path, "alpha")
    standby: ManagerProcess | None = None
    try:
        # Start-up (interpreter, imports, plugins) is the machine's; what follows is the code's.
        leader.wait_log(r"manager .* started", timeout=STARTUP)
        alpha = leader.eventually(lambda: _holder(hub), "a leader", timeout=TAKEOVER)  # a free Lease: sooner
        leader.eventually(lambda: _phase(hub, "first") == "Connected", "the leader's first reconcile", RECONCILE)
        standby = ManagerProcess(config, hub, tmp_path, "beta")
        standby.wait_log(r"manager .* started", timeout=STARTUP)
        add_cluster(hub, "in-flight", in_flight.url)
        # The leader's reconcile of "in-flight" is waiting for the slow node list when it is paused.
        leader.eventually(
            lambda: any(r.path.startswith("/api/v1/nodes") for r in in_flight.callers),
            "the leader's reconcile to list the nodes",
            timeout=RECONCILE,
        )
        leader.signal(signal.SIGSTOP)
        paused_at = time.time()
        beta = standby.eventually(
            lambda: (h := _holder(hub)) and h != alpha and h, "the standby to take over", timeout=TAKEOVER
        )
        took_over = time.time() - paused_at
        for index in range(3):
            add_cluster(hub, f"late-{index}", cluster.url)
        standby.eventually(
            lambda: all(_phase(hub, f"late-{i}") == "Connected" for i in range(3)),
            "the new leader's reconciles",
            timeout=3 * RECONCILE,
        )
        leader.signal(signal.SIGCONT)
        # Resumed, the old leader finds its hold lapsed when its elector's call in progress ends (one
        # Lease call) and stops: in-flight reconciles get the shutdown grace, then the rest of the stop
        # (remote calls cut, informers and plugins stopped) is bounded by request_timeout.
        code = leader.wait(timeout=LEASE_CALL + CoreSettings().shutdown_grace + WAIT)

        alpha_writes = [w for w in hub.writes if w.user_agent == f"clusterpulse/{alpha}"]
        # A Lease renewal sent with the Lease version read before the pause is refused by the
        # server (409, optimistic concurrency): that is the elector's own business, checked below.
        late = [w for w in alpha_writes if w.time > paused_at and "/leases/" not in w.path]
        beta_status = [w for w in hub.writes if w.user_agent == f"clusterpulse/{beta}" and w.path.endswith("/status")]
        print(
            f"\nstandby took the Lease {took_over:.1f}s after the pause; old leader exited {code}; its writes "
            f"before the pause {len(alpha_writes) - len(late)}, after it {len(late)}; new leader's status "
            f"patches {len(beta_status)}"
        )
        assert alpha_writes, "the emulator did not attribute the old leader's writes"
        assert not late, f"the old leader wrote after losing the Lease: {late}"
        assert len(beta_status) >= 4
        assert code == 1
        assert _holder(hub) == beta
        assert "refused" in leader.log() or "lost lease" in leader.log()
    finally:
        leader.stop()
        redis_client.close()
        if standby is not None:
            standby.stop()
