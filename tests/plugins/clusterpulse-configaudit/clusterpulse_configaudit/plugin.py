"""The ``configaudit`` plugin: a ``ConfigAudit`` kind whose objects count ConfigMaps on the hub.

It only uses the public plugin API (``clusterpulse_core``, ``.kinds``, ``.pieces``,
``.context``): no other plugin and no storage backend is imported. Its state is stored as
generic records, so every enabled backend stores it: Redis under ``configaudit:<ns>/<name>``
and VictoriaMetrics as ``clusterpulse_configaudit_configmaps{namespace,name}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clusterpulse_core import hookimpl
from clusterpulse_core.context import ReconcileContext, Runtime
from clusterpulse_core.kinds import ApiAccess, ObjectRef, PrinterColumn, ReconcileResult, ResourceKind
from clusterpulse_core.pieces import RecordDeletion, RecordPiece

CONFIG_AUDIT = ResourceKind(
    group="audit.example.com",
    version="v1",
    kind="ConfigAudit",
    plural="configaudits",
    schema={
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "namespace": {"type": "string", "description": "namespace to audit (default: the object's)"},
                    "intervalSeconds": {"type": "integer", "minimum": 10, "default": 60},
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
    printer_columns=(PrinterColumn("ConfigMaps", "integer", ".status.configMaps"),),
    # What reconcile calls besides the kind itself (`clusterpulse rbac` turns it into the Role).
    # Audited namespaces may be outside the watch namespace: granted there by `rbac --cross-namespace`.
    hub_access=(ApiAccess("", ("configmaps",), ("list",), other_namespaces=True),),
)


class ConfigAuditReconciler:
    """Reconciles ``ConfigAudit`` objects: the object the kind declares (``CONFIG_AUDIT.with_reconciler``)."""

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult:
        """Count the ConfigMaps of the audited namespace, store the record, report in the status."""
        spec = obj.get("spec") or {}
        namespace = spec.get("namespace") or ctx.ref.namespace
        names = sorted(
            str((item.get("metadata") or {}).get("name"))
            for item in ctx.hub.list_items(f"/api/v1/namespaces/{namespace}/configmaps")
        )
        ctx.store(
            RecordPiece(
                kind=CONFIG_AUDIT.kind,
                namespace=ctx.ref.namespace,
                name=ctx.ref.name,
                document={"namespace": namespace, "configMaps": names},
                numbers={"configmaps": len(names)},
                indexes=(f"audited={namespace}",),
            )
        )
        ctx.patch_status({"phase": "Ready", "configMaps": len(names)})
        return ReconcileResult(requeue_after=float(spec.get("intervalSeconds") or 60))

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool:
        """The audit is gone: remove its record."""
        ctx.store(RecordDeletion(CONFIG_AUDIT.kind, ref.namespace, ref.name))
        return True

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """Not swept for ghosts (``None``: this plugin does not read storage back)."""
        return None


class ConfigAuditPlugin:
    """Owns ``ConfigAudit``: lists ConfigMaps, stores a record, patches the status."""

    clusterpulse_api_version = 1

    @hookimpl
    def clusterpulse_resource_kinds(self) -> list[ResourceKind]:
        """The one kind this plugin owns, with the object that reconciles it."""
        return [CONFIG_AUDIT.with_reconciler(ConfigAuditReconciler())]
