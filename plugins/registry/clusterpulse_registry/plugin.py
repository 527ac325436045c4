"""The registry plugin: the RegistryConnection kind and its reconcile."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from clusterpulse_core import hookimpl
from clusterpulse_core.clock import utcnow
from clusterpulse_core.config import Config
from clusterpulse_core.context import Runtime
from clusterpulse_core.kinds import ResourceKind
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
        """RegistryConnection (clusterpulse.io/v1alpha1), five workers, reconciled by :class:`RegistryReconciler`."""
        return [REGISTRY_CONNECTION.with_reconciler(self.reconciler)]

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        """Close the registry connections."""
        self.reconciler.close()
