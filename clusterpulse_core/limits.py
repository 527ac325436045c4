"""Count bounds: what a collection left out, and why, for status and metrics.

Bytes are bounded per response (``max_response_bytes``); counts are bounded per list (a
cluster's nodes, its namespaces, ...; a pushed batch's nodes, ...). What a bound or a name check
left out is reported as :class:`Skipped` records: the reconcile (or the ingester) states them in
the cluster's status and in the ``clusterpulse_collection_skipped`` gauge, so a truncated
cluster never looks complete (docs/faults.md#count-bounds).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence

import attrs
from prometheus_client import CollectorRegistry, Gauge

#: ``Skipped.reason`` of names that are not valid Kubernetes names.
INVALID_NAME = "invalid name"


def over_limit(setting: str, limit: int) -> str:
    """``Skipped.reason`` of items past the count bound ``setting`` (= ``limit``)."""
    return f"over {setting} ({limit})"


@attrs.frozen
class Skipped:
    """``count`` items of ``what`` (``nodes``, ``namespaces``, ...) left out for ``reason``; ``kept`` were stored."""

    what: str
    count: int
    reason: str
    kept: int = 0


def describe(skipped: Iterable[Skipped]) -> str:
    """One line for a status message, per ``what``:
    ``"stored 50 of 60 nodes (2 skipped: invalid name, 8 skipped: over max_nodes (50))"``."""
    by_what: dict[str, list[Skipped]] = {}
    for item in merged(skipped):
        by_what.setdefault(item.what, []).append(item)
    parts = []
    for what, items in by_what.items():
        kept = min(item.kept for item in items)
        total = kept + sum(item.count for item in items)
        reasons = ", ".join(f"{item.count} skipped: {item.reason}" for item in items)
        parts.append(f"stored {kept} of {total} {what} ({reasons})")
    return "; ".join(parts)


def merged(skipped: Iterable[Skipped]) -> tuple[Skipped, ...]:
    """The records with one per (``what``, ``reason``), counts added (``kept``: the smallest reported),
    sorted by ``what`` and ``reason``."""
    out: dict[tuple[str, str], Skipped] = {}
    for item in skipped:
        if item.count <= 0:
            continue
        key = (item.what, item.reason)
        found = out.get(key)
        out[key] = (
            item
            if found is None
            else Skipped(item.what, found.count + item.count, item.reason, min(found.kept, item.kept))
        )
    return tuple(out[key] for key in sorted(out))


class SkippedMetric:
    """The ``clusterpulse_collection_skipped{cluster,what,reason}`` gauge: items the latest collection of
    each cluster left out. A cluster's series disappear when its next collection is complete."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._gauge = Gauge(
            "clusterpulse_collection_skipped",
            "Items the latest collection of a cluster left out (not stored), by what and why",
            ["cluster", "what", "reason"],
            registry=registry,
        )
        self._lock = threading.Lock()
        self._labels: dict[str, set[tuple[str, str]]] = {}

    def publish(self, cluster: str, skipped: Sequence[Skipped]) -> None:
        """Set the cluster's series to ``skipped`` (removing those it no longer has)."""
        current = {(item.what, item.reason): item.count for item in merged(skipped)}
        with self._lock:
            for what, reason in self._labels.get(cluster, set()) - set(current):
                self._gauge.remove(cluster, what, reason)
            for (what, reason), count in current.items():
                self._gauge.labels(cluster=cluster, what=what, reason=reason).set(count)
            if current:
                self._labels[cluster] = set(current)
            else:
                self._labels.pop(cluster, None)

    def forget(self, cluster: str) -> None:
        """Remove every series of a deleted cluster."""
        self.publish(cluster, ())


_METRICS: weakref.WeakKeyDictionary[CollectorRegistry, SkippedMetric] = weakref.WeakKeyDictionary()
_METRICS_LOCK = threading.Lock()


def skipped_metric(registry: CollectorRegistry) -> SkippedMetric:
    """The one :class:`SkippedMetric` of ``registry`` (pull reconciles and the ingester share it)."""
    with _METRICS_LOCK:
        metric = _METRICS.get(registry)
        if metric is None:
            metric = _METRICS[registry] = SkippedMetric(registry)
        return metric
