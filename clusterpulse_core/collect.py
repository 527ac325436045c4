"""Collectors: named pieces of state gathered from one managed cluster."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import attrs

from clusterpulse_core.limits import Skipped
from clusterpulse_core.pieces import Piece

if TYPE_CHECKING:
    from clusterpulse_core.kube.client import KubeClient

log = logging.getLogger(__name__)


@attrs.frozen
class ClusterTarget:
    """A handle on one managed cluster, given to every collector.

    ``client`` talks to the cluster's API server through the cluster's circuit breaker,
    with a timeout on every call. ``state`` is a per-cluster scratch dict that lives as
    long as the cluster (collectors keep e.g. the time of their last scan there).
    ``after_store`` holds callbacks the reconciler runs only once the pieces were stored: a
    collector records "scanned at" there, so a failed store does not skip the next scan.
    ``skipped`` is where collectors say what a count bound or a name check left out of their
    pieces (the reconciler reports it in the status and metrics).
    """

    name: str
    endpoint: str
    client: KubeClient
    state: dict[str, Any] = attrs.field(factory=dict, eq=False)
    after_store: list[Callable[[], None]] = attrs.field(factory=list, eq=False)
    skipped: list[Skipped] = attrs.field(factory=list, eq=False)


@attrs.frozen
class Collector:
    """Contributes one named piece of a cluster's state.

    ``collect`` returns the pieces to store (possibly none). A ``critical`` collector's
    failure fails the whole collection; other failures are logged and skipped.
    """

    name: str
    collect: Callable[[ClusterTarget], Sequence[Piece]]
    critical: bool = False


@attrs.frozen
class CollectionReport:
    """What one run of all collectors produced."""

    pieces: tuple[Piece, ...]
    errors: dict[str, str]


class CriticalCollectorError(Exception):
    """A critical collector failed; the message is the collector's error."""

    def __init__(self, collector: str, cause: BaseException) -> None:
        self.collector = collector
        self.cause = cause
        super().__init__(str(cause))


def run_collectors(
    collectors: Sequence[Collector], target: ClusterTarget, executor: ThreadPoolExecutor | None = None
) -> CollectionReport:
    """Run every collector for ``target`` in parallel; raise the first critical failure.

    The first collector runs on the calling thread (which would only wait otherwise) while the
    others run in ``executor``: one thread hand-off fewer per call, and the first collector
    never queues behind other reconciles' collectors in a busy pool.
    """
    if not collectors:
        return CollectionReport((), {})
    own = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=len(collectors), thread_name_prefix="collect")
    try:
        # Each collector runs in a copy of the caller's context, so the reconcile deadline follows it.
        first, *rest = collectors
        futures: list[tuple[Collector, Future[Sequence[Piece] | None]]] = [
            (c, pool.submit(contextvars.copy_context().run, c.collect, target)) for c in rest
        ]
        inline: Future[Sequence[Piece] | None] = Future()
        try:
            inline.set_result(contextvars.copy_context().run(first.collect, target))
        except Exception as exc:
            inline.set_exception(exc)
        futures.insert(0, (first, inline))
        pieces: list[Piece] = []
        errors: dict[str, str] = {}
        critical: CriticalCollectorError | None = None
        for collector, future in futures:
            try:
                pieces.extend(future.result() or ())
            except Exception as exc:
                if collector.critical:
                    critical = critical or CriticalCollectorError(collector.name, exc)
                else:
                    log.warning("cluster %s: collector %s failed: %s", target.name, collector.name, exc)
                errors[collector.name] = str(exc)
        if critical is not None:
            raise critical
        return CollectionReport(tuple(pieces), errors)
    finally:
        if own:
            pool.shutdown(wait=False)
