"""MetricSources inside the push-mode collector agent (docs/compatibility.md#collector-protocol,
docs/compatibility.md#c6).

The hub sends the compiled definitions as JSON; each is turned back into a :class:`Program`
here (expressions and namespace patterns compiled from their source text), so the agent
evaluates computed fields and namespace filters exactly as a pull collection would. A
document that cannot be decoded or compiled is skipped with a warning; the others still run.

The agent never reads what its role may not grant (Secrets, wildcards:
:func:`clusterpulse_core.rbac.never_read`), whatever the hub sends: such a definition is skipped,
and a kind the agent's cluster resolves to Secrets is refused before anything is listed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from clusterpulse_metricsource.catalog import Catalog
from clusterpulse_metricsource.collector import ClusterCollector
from clusterpulse_metricsource.compiled import CompiledMetricSource
from clusterpulse_metricsource.compiler import program_from_compiled
from clusterpulse_metricsource.discovery import Discovery
from clusterpulse_model.pieces import AggregationsPiece, CustomResourcesPiece

from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.pieces import Piece
from clusterpulse_core.rbac import never_read
from clusterpulse_core.serde import loads, structure

log = logging.getLogger(__name__)

#: Name of the agent's MetricSource collector.
AGENT_COLLECTOR = "custom_resources"


class AgentSources:
    """The MetricSources a push agent evaluates: the set the hub last sent."""

    def __init__(self) -> None:
        self.discovery = Discovery()
        self._lock = threading.Lock()
        self._collectors: tuple[ClusterCollector, ...] = ()

    @property
    def source_ids(self) -> list[str]:
        """``<ns>/<name>`` of every source in use, in the order received."""
        with self._lock:
            return [c.program.source_id for c in self._collectors]

    def replace(self, documents: Sequence[bytes], catalog: Catalog) -> list[str]:
        """Use ``documents`` from now on; returns why each skipped document was skipped."""
        collectors: list[ClusterCollector] = []
        problems: list[str] = []
        for index, document in enumerate(documents):
            try:
                compiled = structure(loads(document), CompiledMetricSource)
                refused = never_read(compiled.source.group, compiled.source.resource)
                if refused:
                    problems.append(
                        f"metric_sources_json[{index}]: source {compiled.source_id} refused: {refused}, "
                        "which the agent never reads"
                    )
                    continue
                collectors.append(
                    ClusterCollector(program_from_compiled(compiled, catalog), self.discovery, never_read)
                )
            except Exception as exc:
                problems.append(f"metric_sources_json[{index}]: {type(exc).__name__}: {exc}")
        for problem in problems:
            log.warning("skipping a MetricSource from the hub: %s", problem)
        with self._lock:
            self._collectors = tuple(collectors)
        return problems

    def collect(self, target: ClusterTarget) -> Sequence[Piece]:
        """Every source against the agent's cluster; a failing source is logged and left out."""
        with self._lock:
            collectors = self._collectors
        pieces: list[Piece] = []
        for collector in collectors:
            try:
                result = collector.collect(target)
            except Exception as exc:
                log.warning("metricsource %s: collection failed: %s", collector.program.source_id, exc)
                continue
            pieces.append(CustomResourcesPiece(target.name, result.collection))
            if result.aggregations is not None:
                pieces.append(AggregationsPiece(target.name, result.aggregations))
        return pieces
