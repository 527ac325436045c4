"""Adding up the replicas' shares of a sharded MetricSource collection (``status.shards``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clusterpulse_metricsource.shares import ClusterShare, ShardShare, add_up, read_shares

from clusterpulse_core.serde import unstructure

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_newest_share_of_each_connected_cluster_counts_once_and_gone_members_not_at_all() -> None:
    shares = {
        # a had c2 before it moved to b: b's newer entry wins, c2 is counted once.
        "a": ShardShare(T0, {"c1": ClusterShare(10), "c2": ClusterShare(5)}, detail="cluster c1: f() failed"),
        "b": ShardShare(T0 + timedelta(seconds=20), {"c2": ClusterShare(7, 2), "c3": ClusterShare(0, 1, "boom")}),
        "gone": ShardShare(T0 + timedelta(seconds=30), {"c4": ClusterShare(100)}),
    }
    totals = add_up(shares, live={"a", "b"}, connected={"c1", "c2", "c3", "c4", "c5"})
    assert (totals.resources, totals.clusters, totals.errors) == (17, 2, 3)
    assert totals.unknown_kind == ()
    assert totals.detail == "cluster c1: f() failed"
    # A cluster no longer connected is not counted, whoever reported it.
    assert add_up(shares, live={"a", "b"}, connected={"c1"}).resources == 10


def test_unknown_kind_clusters_are_reported_and_unreadable_shares_ignored() -> None:
    good = ShardShare(T0, {"c1": ClusterShare(0, 1, "no such kind", unknown_kind=True)})
    status = {"shards": {"a": unstructure(good), "b": {"collectedAt": "yesterday"}, "c": None, "d": 7}}
    shares = read_shares(status)
    assert shares == {"a": good}
    assert add_up(shares, live={"a"}, connected={"c1"}).unknown_kind == ("c1",)
    assert read_shares({}) == {} and read_shares(None) == {} and read_shares({"shards": []}) == {}
