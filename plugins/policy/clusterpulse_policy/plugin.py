"""The policy plugin: the MonitorAccessPolicy kind, its reconcile, the validator and ``clusterpulse policy``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import click

from clusterpulse_core import hookimpl
from clusterpulse_core.clock import utcnow
from clusterpulse_core.config import Config
from clusterpulse_core.context import Runtime
from clusterpulse_core.hookspecs import HookDeclarer
from clusterpulse_core.kinds import ResourceKind
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
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        """Declare this plugin's hooks (:mod:`clusterpulse_policy.hookspecs`)."""
        from clusterpulse_policy import hookspecs

        pluginmanager.add_hookspecs(hookspecs)

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
        """MonitorAccessPolicy (clusterpulse.io/v1alpha1), three workers, reconciled by :class:`PolicyReconciler`."""
        return [MONITOR_ACCESS_POLICY.with_reconciler(self.reconciler)]

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
