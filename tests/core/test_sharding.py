"""Sharding by Leases: the ring, one member's metrics and Lease, dead members' Leases.

The test-local sharded kind ``Ticket`` records every reconcile in a real redis-server. The
fleet test (three to four replicas as subprocesses sharing 300 ClusterConnections) is
``tests/cluster/test_cluster_sharded.py``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import redis
from clusterpulse_testing.polling import eventually
from clusterpulse_testing.servers import ServerProcess

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.context import ReconcileContext
from clusterpulse_core.fence import Fence
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime
from clusterpulse_core.runtime.manager import Manager
from clusterpulse_core.runtime.sharding import (
    VIEW_ANNOTATION,
    HashRing,
    ShardMember,
    lease_name,
    object_key,
    parse_view,
)

NAMESPACE = "clusterpulse"
GROUP = "test.clusterpulse.io"
INTERVAL = 1.0
LEASE_DURATION = 2.0
RENEW_DEADLINE = 1.5
RETRY_PERIOD = 0.25
#: Bound of a wait: thirty Lease durations (a ring change or a takeover needs one or two).
WAIT = 30 * LEASE_DURATION

TICKET = ResourceKind(
    group=GROUP,
    version="v1",
    kind="Ticket",
    plural="tickets",
    schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    workers=4,
    sharded=True,
)


# --------------------------------------------------------------------------- the ring


def test_the_ring_spreads_objects_and_moves_few_when_a_member_joins() -> None:
    keys = [f"Ticket/ns/t{i}" for i in range(3000)]
    three = HashRing(["a", "b", "c"])
    owners = [three.owner(key) for key in keys]
    shares = {member: owners.count(member) for member in "abc"}
    assert all(600 < share < 1400 for share in shares.values()), shares
    four = HashRing(["a", "b", "c", "d"])
    moved = [key for key, owner in zip(keys, owners, strict=True) if four.owner(key) != owner]
    assert all(four.owner(key) == "d" for key in moved)  # only the newcomer gains
    assert 450 < len(moved) < 1100
    assert HashRing(["c", "b", "a"]).owner("Ticket/ns/t1") == three.owner("Ticket/ns/t1")
    assert HashRing([]).owner("x") is None


def test_lease_names_and_published_views_are_checked() -> None:
    assert lease_name("replica-0") == "clusterpulse-shard-replica-0"
    assert lease_name("Host_1a2b") == "clusterpulse-shard-host-1a2b"
    assert len(lease_name("x" * 400)) <= 253
    assert parse_view('["b", "a"]') == ("a", "b")
    assert parse_view("not json") is None
    assert parse_view('{"a": 1}') is None
    assert parse_view("[1, 2]") is None
    assert parse_view("[" + ",".join(['"x"'] * 20000) + "]") is None  # too long: ignored
    assert parse_view(None) is None


# --------------------------------------------------------------------------- one member


class TicketPlugin:
    """Owns ``Ticket``; records every reconcile in Redis with this replica's identity."""

    clusterpulse_api_version = 1

    def __init__(self, identity: str, redis_port: int) -> None:
        self.identity = identity
        self.redis = redis.Redis(host="127.0.0.1", port=redis_port)

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        return [TICKET]

    @hookimpl
    def clusterpulse_reconcile(
        self, kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext
    ) -> ReconcileResult | None:
        started = time.time()
        time.sleep(0.05)
        self.redis.rpush(f"reconciles:{obj['metadata']['name']}", f"{self.identity} {started} {time.time()}")
        return ReconcileResult(requeue_after=INTERVAL)

    @hookimpl
    def clusterpulse_forget(self, kind: ResourceKind, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        return True


def test_one_sharded_replica_owns_everything_and_says_so_in_metrics(kube_api: Any, redis_server: ServerProcess) -> None:
    hub = kube_api()
    hub.add_crd(GROUP, "v1", "Ticket", "tickets")
    for index in range(5):
        hub.create(
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "Ticket",
                "metadata": {"name": f"t{index}", "namespace": NAMESPACE},
                "spec": {},
            }
        )
    core = CoreSettings(
        plugins=(),
        namespace=NAMESPACE,
        sharding=True,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    host = PluginHost([], extra={"tickets": TicketPlugin("solo", redis_server.port)})
    manager = Manager(build_runtime(Config(core=core), host, hub=KubeClient(hub.api_client())), "solo")
    manager.start()
    try:
        metric = manager.runtime.metrics.get_sample_value
        eventually(
            lambda: metric("clusterpulse_shard_owned_objects", {"controller": "ticket"}) == 5,
            "the only member holds all five objects",
            timeout=WAIT,
        )
        assert metric("clusterpulse_shard_members") == 1
        assert metric("clusterpulse_shard_handovers_total", {"direction": "in"}) == 5
        lease = hub.get("coordination.k8s.io/v1", "leases", "clusterpulse-shard-solo", NAMESPACE)
        assert lease["spec"]["holderIdentity"] == "solo"
        eventually(
            lambda: (
                parse_view(
                    hub.get("coordination.k8s.io/v1", "leases", "clusterpulse-shard-solo", NAMESPACE)["metadata"][
                        "annotations"
                    ][VIEW_ANNOTATION]
                )
                == ("solo",)
            ),
            "the member publishes its view",
            timeout=WAIT,
        )
        assert manager.shard is not None and manager.shard.members == ("solo",)
    finally:
        manager.stop()
    released = hub.get("coordination.k8s.io/v1", "leases", "clusterpulse-shard-solo", NAMESPACE)
    assert released["spec"].get("holderIdentity", "") == ""  # a clean stop lets the others take over at once


def ghost_lease(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": f"clusterpulse-shard-{name}", "namespace": NAMESPACE},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 2, "renewTime": "2026-01-01T00:00:00.000000Z"},
    }


def test_a_dead_members_lease_is_deleted_after_dead_after_unless_it_came_back(kube_api: Any) -> None:
    hub = kube_api()
    hub.create(ghost_lease("ghost"))
    hub.create(ghost_lease("lazarus"))
    now = [0.0]
    member = ShardMember(
        KubeClient(hub.api_client()),
        NAMESPACE,
        "alive",
        {},
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
        dead_after=20.0,
        clock=lambda: now[0],
    )

    def leases() -> list[str]:
        return sorted(o["metadata"]["name"] for o in hub.list("coordination.k8s.io/v1", "leases", NAMESPACE))

    def walk(to: float) -> None:
        """Move the clock to ``to`` in rounds, as the member's thread would: its own Lease never lapses."""
        while now[0] < to:
            now[0] = min(now[0] + RENEW_DEADLINE / 2, to)
            member.round()

    member.round()  # first seen now: counted from here, by our clock (renewTime is another clock)
    assert member.members == ("alive", "ghost", "lazarus")
    walk(19.0)
    assert member.members == ("alive",)  # not renewed for their duration: gone, but not yet deleted
    assert leases() == ["clusterpulse-shard-alive", "clusterpulse-shard-ghost", "clusterpulse-shard-lazarus"]
    # lazarus renews its Lease between our last look and the deletion: the resourceVersion
    # precondition keeps it.
    member._observe()
    back = hub.get("coordination.k8s.io/v1", "leases", "clusterpulse-shard-lazarus", NAMESPACE)
    back["spec"]["renewTime"] = "2026-01-01T00:00:05.000000Z"
    hub.update(back)
    now[0] = 20.0
    member._delete_dead()
    assert leases() == ["clusterpulse-shard-alive", "clusterpulse-shard-lazarus"]
    assert member.metrics.dead_deleted._value.get() == 1
    # Seen renewed now, it is kept until it stays unrenewed for dead_after again.
    member.round()
    walk(39.0)
    assert "clusterpulse-shard-lazarus" in leases()
    walk(40.5)
    assert leases() == ["clusterpulse-shard-alive"]
    assert member.members == ("alive",)
    with pytest.raises(ValueError, match="dead_after"):
        ShardMember(
            KubeClient(hub.api_client()),
            NAMESPACE,
            "x",
            {},
            lease_duration=2.0,
            renew_deadline=1.5,
            retry_period=0.25,
            dead_after=2.0,
        )


def test_a_member_whose_renewal_lapsed_stops_and_closes_the_fence_even_if_a_late_renewal_would_succeed(
    kube_api: Any,
) -> None:
    """Paused past its renew deadline (the fake clock jumps), the member gives up before renewing again."""
    hub = kube_api()
    now = [0.0]
    fence = Fence(clock=lambda: now[0])
    fence.require_lease()
    lost: list[bool] = []
    member = ShardMember(
        KubeClient(hub.api_client()),
        NAMESPACE,
        "sleeper",
        {},
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
        fence=fence,
        clock=lambda: now[0],
        on_lost=lambda: lost.append(True),
    )
    assert fence.why_not() != ""  # no renewal yet: closed
    member.round()
    assert fence.why_not() == ""  # renewed at 0: may write until 0 + renew_deadline
    now[0] = RENEW_DEADLINE  # the hold is over: no write, before any round runs
    assert "not held" in fence.why_not()
    renew_time = hub.get("coordination.k8s.io/v1", "leases", "clusterpulse-shard-sleeper", NAMESPACE)["spec"]
    member.round()
    assert lost == [True]
    assert fence.closed.startswith("shard member Lease")
    # It did not renew: its Lease (which nobody else wrote) would have taken the renewal.
    after = hub.get("coordination.k8s.io/v1", "leases", "clusterpulse-shard-sleeper", NAMESPACE)["spec"]
    assert after == renew_time


def test_a_split_reconcile_using_a_held_object_holds_its_handover_back(kube_api: Any) -> None:
    """MetricSource collection from a cluster ends before the cluster's ClusterConnection moves."""
    hub = kube_api()
    client = KubeClient(hub.api_client())
    member = ShardMember(
        client,
        NAMESPACE,
        "a",
        {},
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
    )
    member.round()
    assert member.published == ("a",)
    name = next(
        f"c{i}"
        for i in range(100)
        if HashRing(["a", "b"]).owner(object_key(ObjectRef("ClusterConnection", NAMESPACE, f"c{i}"))) == "b"
    )
    cluster = ObjectRef("ClusterConnection", NAMESPACE, name)
    assert member.admit(cluster) and member.holds(cluster)  # alone: it holds everything
    lease = ghost_lease("b")
    lease["metadata"]["annotations"] = {VIEW_ANNOTATION: '["a", "b"]'}
    lease["spec"]["leaseDurationSeconds"] = 600  # b stays live for the whole test, however slow the machine
    with member.using([cluster, ObjectRef("ClusterConnection", NAMESPACE, "never-held")]) as held:
        assert held == {cluster}
        hub.create(lease)  # b joins; the ring now gives the cluster to b
        member.round()
        assert member.members == ("a", "b")
        assert not member.holds(cluster)
        with member.using([cluster]) as again:
            assert again == set()  # no new work for it here
        member.round()
        assert member.published == ("a",)  # still in use: not let go, so b cannot start it
    member.round()
    assert member.published == ("a", "b")  # let go: b may start it once the handover delay passed
    assert not member.admit(cluster)
