"""What a plugin declares about the custom resource kinds it owns, and what a reconcile returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from clusterpulse_core.openapi import apply_defaults


@attrs.frozen
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry of a CRD (what ``kubectl get`` shows)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0


@attrs.frozen
class ResourceKind:
    """A custom resource kind owned by one plugin.

    ``schema`` is the ``openAPIV3Schema`` of the version; the core turns the declaration into
    a CRD manifest (``clusterpulse crds``) and runs an informer, a work queue and ``workers``
    reconcile workers for it.
    """

    group: str
    version: str
    kind: str
    plural: str
    schema: Mapping[str, Any]
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = True
    categories: tuple[str, ...] = ()
    #: Maximum concurrent reconciles of this kind (controllers.md §1.2).
    workers: int = 1
    #: With ``sharding = true``, split this kind's objects between the replicas (each object
    #: reconciled by one); a kind that is not sharded runs on the leader only.
    sharded: bool = False

    @property
    def api_version(self) -> str:
        """``group/version`` as it appears in ``apiVersion``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def crd_name(self) -> str:
        """``<plural>.<group>``, the CRD's metadata.name."""
        return f"{self.plural}.{self.group}"

    def with_defaults(self, obj: Mapping[str, Any]) -> Any:
        """``obj`` with the schema's defaults applied where a field is absent (DECISIONS R5).

        The runtime calls this before every reconcile, so an object created before its CRD
        had a default (or served by an API server that does not default) reads the same.
        """
        return apply_defaults(self.schema, obj)

    def api_path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of the collection (or of one object when ``name`` is given)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


@attrs.frozen
class ObjectRef:
    """Identifies one object of a kind: what the work queue holds and deletion receives."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@attrs.frozen
class ReconcileResult:
    """What a reconcile returns: when to come back (seconds), or ``None`` for not at all.

    A reconcile that handled a failure itself (status set to Error, shorter requeue) says
    so in ``error``, so ``run --once`` and the error metrics count it.
    """

    requeue_after: float | None = None
    error: str = ""


class TerminalError(Exception):
    """Raised by a reconcile for an error that retrying cannot fix (logged, not retried)."""
