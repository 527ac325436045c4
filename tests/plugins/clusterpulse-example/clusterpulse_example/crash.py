"""A kind whose reconcile raises (the runtime logs the traceback once per distinct error)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clusterpulse_core import hookimpl
from clusterpulse_core.context import ReconcileContext
from clusterpulse_core.kinds import ReconcileResult, ResourceKind

clusterpulse_api_version = 1

CRASH = ResourceKind(
    group="example.clusterpulse.io",
    version="v1",
    kind="Crash",
    plural="crashes",
    schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
)


@hookimpl
def clusterpulse_resource_kinds() -> Sequence[ResourceKind]:
    """The ``Crash`` kind."""
    return [CRASH]


@hookimpl
def clusterpulse_reconcile(kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
    """Reads a key that is not there: ``KeyError: 'spec.target'``."""
    return ReconcileResult(requeue_after=float(obj["spec.target"]))
