"""The policy plugin: the MonitorAccessPolicy kind, its reconcile, the validator and ``clusterpulse policy``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import click

from clusterpulse_core import hookimpl
from clusterpulse_core.clock import utcnow
from clusterpulse_core.config import Config
from clusterpulse_core.context import ReconcileContext, Runtime
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
from clusterpulse_core.plugins import PluginHost
from clusterpulse_policy.kind import MONITOR_ACCESS_POLICY
from clusterpulse_policy.reconcile import PolicyReconciler
from clusterpulse_policy.settings import PolicySettings
from clusterpulse_policy.validator import Validator


class PolicyPlugin:
    """Compiles MonitorAccessPolicy objects into the access policies the ClusterPulse APIs read.

    ``clock`` gives the compile time, the state's reference time and the event times.
    """

    clusterpulse_api_version = 1

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self.clock = clock
        self.settings = PolicySettings()
        self.reconciler = PolicyReconciler(clock)
        self.validator: Validator | None = None

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.policy]`` is validated by :class:`PolicySettings`."""
        return PolicySettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: PolicySettings | None) -> None:
        """Keep the validated settings."""
        self.settings = settings or PolicySettings()

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group, plugins: PluginHost) -> None:
        """``clusterpulse policy can-i``: what a principal sees, from the compiled policies."""
        from clusterpulse_policy.cli import make_policy_command

        cli.add_command(make_policy_command(plugins))

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        """MonitorAccessPolicy (clusterpulse.io/v1alpha1), three workers."""
        return [MONITOR_ACCESS_POLICY]

    @hookimpl
    def clusterpulse_reconcile(self, kind: ResourceKind, obj: Mapping[str, Any],
                               ctx: ReconcileContext) -> ReconcileResult | None:
        """Compile and store one policy, patch its status."""
        if kind.kind != MONITOR_ACCESS_POLICY.kind:
            return None
        return self.reconciler.reconcile(obj, ctx)

    @hookimpl
    def clusterpulse_stored_refs(self, kind: ResourceKind, runtime: Runtime) -> Sequence[ObjectRef] | None:
        """The policies storage holds (``policies``: ``<ns>/<name>``)."""
        names = runtime.plugins.stored_names("policies")
        if kind.kind != MONITOR_ACCESS_POLICY.kind or names is None:
            return None
        return [ObjectRef(kind.kind, *name.split("/", 1)) for name in names if "/" in name]

    @hookimpl
    def clusterpulse_forget(self, kind: ResourceKind, ref: ObjectRef, ctx: ReconcileContext) -> bool | None:
        """A policy was deleted: remove it from the store and publish ``deleted``."""
        if kind.kind != MONITOR_ACCESS_POLICY.kind:
            return None
        return self.reconciler.forget(ref, ctx)

    @hookimpl
    def clusterpulse_start(self, runtime: Runtime) -> None:
        """Start the leader-only clean-up and validator."""
        self.validator = Validator(runtime, float(self.settings.validation_interval), self.clock)
        self.validator.start()

    @hookimpl
    def clusterpulse_stop(self, runtime: Runtime) -> None:
        """Stop the validator."""
        if self.validator is not None:
            self.validator.stop()
            self.validator = None
