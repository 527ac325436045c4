"""What a plugin declares about the custom resource kinds it owns, and what a reconcile returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from clusterpulse_core.openapi import apply_defaults

if TYPE_CHECKING:
    from clusterpulse_core.context import ReconcileContext, Runtime


@attrs.frozen
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry of a CRD (what ``kubectl get`` shows)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0


@attrs.frozen
class ApiAccess:
    """API access a plugin's code needs: ``verbs`` on ``resources`` of API ``group`` (one RBAC rule).

    ``group`` is ``""`` for the core group. ``resource_names`` narrows the rule to those objects;
    ``non_resource_urls`` (with ``resources`` empty) grants plain paths such as ``/version``.
    ``other_namespaces`` marks a hub access that may target objects outside the watched namespace
    (a ``credentialsRef.namespace``): ``clusterpulse rbac`` grants it there only when asked to
    (``--cross-namespace``). Declare only what the code calls: ``clusterpulse rbac`` prints exactly
    these rules, and the deployment in ``deploy/`` uses its output.
    """

    group: str = ""
    resources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("get",)
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    other_namespaces: bool = False
    #: Managed-cluster push access confined to one namespace: ``clusterpulse rbac --managed --push``
    #: grants it with a Role (and RoleBinding) there instead of the ClusterRole.
    namespace: str = ""


#: ``get`` on the Secrets a ``credentialsRef`` names (in the object's namespace, or in the one the
#: reference gives: hence ``other_namespaces``).
READ_REFERENCED_SECRETS = ApiAccess("", ("secrets",), ("get",), other_namespaces=True)
#: What :meth:`ReconcileContext.managed_cluster <clusterpulse_core.context.ReconcileContext.managed_cluster>`
#: reads on the hub for the kind calling it: the Secret with the cluster's credentials (reading the
#: cluster itself is the access of the plugin locating it, ``clusterpulse_managed_cluster``). Add it
#: to a kind's ``hub_access`` when its reconcile reaches managed clusters.
MANAGED_CLUSTER_ACCESS = (READ_REFERENCED_SECRETS,)
#: Reading the API server's version and discovery documents (granted to every authenticated user
#: by the default ``system:discovery`` ClusterRole; declared so a locked-down cluster knows).
READ_DISCOVERY = ApiAccess(non_resource_urls=("/version", "/api", "/api/*", "/apis", "/apis/*"))


class Reconciler(Protocol):
    """What reconciles the objects of a kind: the object a kind declares (``ResourceKind.reconciler``).

    The runtime calls it for the objects of its kind only, from ``kind.workers`` worker threads
    (so it must be safe to call concurrently for different objects); an exception is retried with
    per-object exponential backoff, except :class:`TerminalError`.
    """

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult | None:
        """Reconcile one object (raw JSON, the schema's defaults applied).

        Patch its status with ``ctx.patch_status``, store pieces with ``ctx.store``; return when to
        come back (``ReconcileResult(requeue_after=seconds)``), ``None`` for not at all. Status-only
        updates (unchanged ``metadata.generation``) never call it.
        """

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool | ReconcileResult | None:
        """An object was deleted (or found missing): remove its state.

        Called once per deletion seen. A reconciler that put a finalizer on the object and still
        waits to clean up returns ``ReconcileResult(requeue_after=seconds)`` to be called again.
        """

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """The objects of this kind whose state storage still holds, for the ghost sweep (at start
        and every ``ghost_sweep_interval``): those the hub no longer has are forgotten as a deletion
        would. ``None``: cannot tell (the kind is not swept)."""


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
    #: Maximum concurrent reconciles of this kind (docs/compatibility.md#manager).
    workers: int = 1
    #: With ``sharding = true``, split this kind's objects between the replicas (each object
    #: reconciled by one); a kind that is not sharded runs on the leader only.
    sharded: bool = False
    #: With ``sharding = true``, reconcile every object of this kind on every replica, each doing
    #: the part of the work that belongs to the objects of kind ``split_by`` it holds (e.g.
    #: MetricSource split by ClusterConnection: each replica collects from its own clusters);
    #: see ``Runtime.shard``. Without sharding the kind runs on the leader, as any other.
    split_by: str = ""
    #: What reconciling this kind does on the hub besides watching the kind and patching its
    #: status (which the core grants by itself): e.g. reading the Secrets it references.
    hub_access: tuple[ApiAccess, ...] = ()
    #: What the credentials of a managed cluster must allow there for this kind's collectors
    #: (read-only): printed by ``clusterpulse rbac --managed``.
    managed_access: tuple[ApiAccess, ...] = ()
    #: What the hub itself does on a managed cluster in push mode, where it installs the collector
    #: agent (writes): printed by ``clusterpulse rbac --managed --push``.
    managed_push_access: tuple[ApiAccess, ...] = ()
    #: The object reconciling this kind (:class:`Reconciler`), set by the declaring plugin
    #: (``KIND.with_reconciler(self.reconciler)``). ``None``: the owning plugin's
    #: ``clusterpulse_reconcile`` / ``clusterpulse_forget`` / ``clusterpulse_stored_refs`` hooks
    #: (the earlier contract) are called instead. Not part of the kind's identity.
    reconciler: Reconciler | None = attrs.field(default=None, eq=False, repr=False)

    def with_reconciler(self, reconciler: Reconciler) -> ResourceKind:
        """This kind, reconciled by ``reconciler`` (what ``clusterpulse_resource_kinds`` returns)."""
        return attrs.evolve(self, reconciler=reconciler)

    @property
    def api_version(self) -> str:
        """``group/version`` as it appears in ``apiVersion``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def crd_name(self) -> str:
        """``<plural>.<group>``, the CRD's metadata.name."""
        return f"{self.plural}.{self.group}"

    @property
    def not_served(self) -> str:
        """What to say when the hub answers 404 for this kind: its CRD is not installed."""
        return (
            f"kind {self.kind} is not served by the hub: its CRD {self.crd_name} is not installed "
            f"(clusterpulse crds | kubectl apply -f -)"
        )

    def with_defaults(self, obj: Mapping[str, Any]) -> Any:
        """``obj`` with the schema's defaults applied where a field is absent (docs/compatibility.md#r5).

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


def stored_refs(runtime: Runtime, kind: str, index: str, *, namespaced: bool = False) -> list[ObjectRef] | None:
    """The objects of ``kind`` whose state the storage backends hold in ``index`` (what a
    :meth:`Reconciler.stored_refs` answers from ``PluginHost.stored_names``).

    The index holds names in the watch namespace, or with ``namespaced`` ``<namespace>/<name>``
    (a name without one is skipped). ``None`` when no backend keeps the index.
    """
    names = runtime.plugins.stored_names(index)
    if names is None:
        return None
    if not namespaced:
        return [ObjectRef(kind, runtime.namespace, name) for name in names]
    return [ObjectRef(kind, *name.split("/", 1)) for name in names if "/" in name]


class TerminalError(Exception):
    """Raised by a reconcile for an error that retrying cannot fix (logged, not retried)."""
