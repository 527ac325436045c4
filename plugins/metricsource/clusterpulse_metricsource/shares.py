"""A MetricSource's collection split between sharded replicas: each replica's share, and their sum.

With ``sharding = true`` every replica collects a MetricSource from the clusters whose
ClusterConnection it holds, and reports what it collected in the object's status under
``status.shards.<identity>`` (a merge patch of its own entry only, so replicas never clobber each
other). The replica that holds the MetricSource itself adds the shares of the live members up,
one entry per currently connected cluster (the newest, should a cluster just have moved), and
writes the totals (``resourcesCollected``, ``clustersCollected``, ``errorsLastRun``) and the
shares of members that are gone (as ``null``: removed).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

import attrs

from clusterpulse_core.serde import structure, wire

log = logging.getLogger(__name__)

#: ``status.shards``: one entry per replica identity.
SHARDS_FIELD = "shards"


@wire(case="camel")
@attrs.frozen
class ClusterShare:
    """One cluster in a replica's last run: resources collected, errors, why it failed (``""``: it did not)."""

    resources: int = 0
    errors: int = 0
    failure: str = ""
    unknown_kind: bool = False


@wire(case="camel")
@attrs.frozen
class ShardShare:
    """What one replica collected of one MetricSource in its last run (``status.shards.<identity>``)."""

    collected_at: datetime
    clusters: dict[str, ClusterShare] = attrs.field(factory=dict)
    #: The first plugin function failure of the run, for the status message.
    detail: str = ""


@attrs.frozen
class Totals:
    """The sum of the live members' shares over the connected clusters."""

    resources: int
    clusters: int
    errors: int
    unknown_kind: tuple[str, ...]
    detail: str


def read_shares(status: Any) -> dict[str, ShardShare]:
    """The shares in an object's status; an unreadable entry is left out (and logged)."""
    raw = status.get(SHARDS_FIELD) if isinstance(status, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    shares = {}
    for member, entry in raw.items():
        if entry is None:
            continue
        try:
            shares[str(member)] = structure(entry, ShardShare)
        except Exception as exc:
            log.warning("status.shards.%s is unreadable (ignored): %s", member, exc)
    return shares


def add_up(shares: Mapping[str, ShardShare], live: Collection[str], connected: Collection[str]) -> Totals:
    """Totals over ``connected`` clusters from the shares of ``live`` members (newest share per cluster)."""
    newest: dict[str, tuple[datetime, ClusterShare]] = {}
    detail = ""
    for member in sorted(shares):
        if member not in live:
            continue
        share = shares[member]
        detail = detail or share.detail
        for cluster, entry in share.clusters.items():
            if cluster not in connected:
                continue
            seen = newest.get(cluster)
            if seen is None or share.collected_at > seen[0]:
                newest[cluster] = (share.collected_at, entry)
    entries = [entry for _at, entry in newest.values()]
    return Totals(
        resources=sum(entry.resources for entry in entries if not entry.failure),
        clusters=sum(1 for entry in entries if not entry.failure),
        errors=sum(entry.errors for entry in entries),
        unknown_kind=tuple(sorted(cluster for cluster, (_at, entry) in newest.items() if entry.unknown_kind)),
        detail=detail,
    )
