"""The registry plugin: the RegistryConnection kind and its reconcile."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from clusterpulse_core import hookimpl
from clusterpulse_core.clock import utcnow
from clusterpulse_core.config import Config
from clusterpulse_core.context import ReconcileContext, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
from clusterpulse_registry.kind import REGISTRY_CONNECTION
from clusterpulse_registry.reconcile import RegistryReconciler
from clusterpulse_registry.settings import RegistrySettings


class RegistryPlugin:
    """Health-monitors container registries declared as RegistryConnection objects (Docker Registry v2).

    ``clock`` gives the check time written to the status, the stored state and the events.
    """

    clusterpulse_api_version = 1

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.reconciler = RegistryReconciler(clock)

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.registry]`` is validated by :class:`RegistrySettings`."""
        return RegistrySettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: RegistrySettings | None) -> None:
        """Keep the token realm hosts the credentials may go to."""
        self.reconciler.settings = settings or RegistrySettings()

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        """RegistryConnection (clusterpulse.io/v1alpha1), five workers.

        Reconciled by this plugin object (its ``reconcile``, ``forget`` and ``stored_refs``).
        """
        return [REGISTRY_CONNECTION.with_reconciler(self)]

    def reconcile(self, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult | None:
        """Check one registry, store the outcome, patch its status; come back after its interval."""
        return self.reconciler.reconcile(obj, ctx)

    def stored_refs(self, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """The registries storage holds (``registries``), in the watch namespace."""
        names = runtime.plugins.stored_names("registries")
        if names is None:
            return None
        return [ObjectRef(REGISTRY_CONNECTION.kind, runtime.namespace, name) for name in names]

    def forget(self, ref: ObjectRef, ctx: ReconcileContext) -> bool | None:
        """A RegistryConnection was deleted: remove its stored state and publish ``registry.deleted``."""
        return self.reconciler.forget(ref, ctx)

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        """Close the registry connections."""
        self.reconciler.close()
