"""The MetricSource plugin: the kind, its reconciler, the built-in vocabulary and the CLI commands."""

from __future__ import annotations

from collections.abc import Sequence

import click
from clusterpulse_metricsource.agent import AGENT_COLLECTOR, AgentSources
from clusterpulse_metricsource.builtins.aggregations import register_builtin_aggregations
from clusterpulse_metricsource.builtins.field_types import register_builtin_field_types
from clusterpulse_metricsource.builtins.filters import register_builtin_filter_operators
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_metricsource.functions import register_builtin_functions
from clusterpulse_metricsource.hookspecs import ExpressionCompiler
from clusterpulse_metricsource.reconcile import MetricSourceReconciler
from clusterpulse_metricsource.settings import MetricSourceSettings
from clusterpulse_model import AggregationResults, CollectedResource

from clusterpulse_core import hookimpl
from clusterpulse_core.collect import Collector
from clusterpulse_core.config import Config
from clusterpulse_core.hookspecs import HookDeclarer, Register
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.plugins import PluginHost


class MetricSourcePlugin:
    """Any Kubernetes resource type as metrics: compile, collect from every cluster, aggregate."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.reconciler = MetricSourceReconciler()
        self.agent_sources = AgentSources()

    @hookimpl
    def clusterpulse_addhooks(self, pluginmanager: HookDeclarer) -> None:
        """Declare this plugin's hooks (:mod:`clusterpulse_metricsource.hookspecs`)."""
        from clusterpulse_metricsource import hookspecs

        pluginmanager.add_hookspecs(hookspecs)

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.metricsource]`` is validated by :class:`MetricSourceSettings`."""
        return MetricSourceSettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: MetricSourceSettings | None) -> None:
        """Keep the source-kind policy."""
        self.reconciler.settings = settings or MetricSourceSettings()

    @hookimpl
    def clusterpulse_register_functions(self, register: Register) -> None:
        """The built-in expression functions (round, concat, age, ...)."""
        register_builtin_functions(register)

    @hookimpl
    def clusterpulse_register_aggregations(self, register: Register) -> None:
        """count, sum, avg, min, max, percentile, distinct."""
        register_builtin_aggregations(register)

    @hookimpl
    def clusterpulse_register_field_types(self, register: Register) -> None:
        """string, integer, float, boolean, quantity, timestamp, arrayLength."""
        register_builtin_field_types(register)

    @hookimpl
    def clusterpulse_register_filter_operators(self, register: Register) -> None:
        """equals, notEquals, contains, startsWith, endsWith, greaterThan, lessThan, in, matches."""
        register_builtin_filter_operators(register)

    @hookimpl(trylast=True)  # the built-in language: a plugin offering another compiler answers first
    def clusterpulse_expression_compiler(self) -> ExpressionCompiler:
        """The computed-field compiler (``compile_expression(text, functions)``), for other plugins."""
        from clusterpulse_metricsource.expr import compile_expression

        return compile_expression

    @hookimpl
    def clusterpulse_resource_kinds(self) -> Sequence[ResourceKind]:
        """The MetricSource kind, reconciled by :class:`MetricSourceReconciler`."""
        return [METRIC_SOURCE.with_reconciler(self.reconciler)]

    @hookimpl
    def clusterpulse_aggregate_resources(
        self, source_id: str, resources: Sequence[CollectedResource]
    ) -> AggregationResults | None:
        """A pushed batch's resources aggregated as a pull collection aggregates them (the hub's definition)."""
        collector = self.reconciler.compiled(source_id)
        return None if collector is None else collector.aggregate(resources)

    @hookimpl(optionalhook=True)
    def clusterpulse_agent_read_types(self) -> Sequence[tuple[str, str]]:
        """The resource types of the compiled MetricSources: push-mode agents must be able to read them."""
        return self.reconciler.resource_types()

    @hookimpl
    def clusterpulse_collectors(self, where: str) -> Sequence[Collector]:
        """Inside a push agent: the MetricSources the hub sent (the hub collects them itself)."""
        if where != "agent":
            return []
        return [Collector(AGENT_COLLECTOR, self.agent_sources.collect)]

    @hookimpl(optionalhook=True)
    def clusterpulse_agent_sources(self, sources: Sequence[bytes], plugins: PluginHost) -> None:
        """Compile the definitions a push agent received (computed fields and namespace patterns too)."""
        from clusterpulse_metricsource.catalog import Catalog

        self.agent_sources.replace(sources, Catalog.from_contributions(plugins.contributions))

    @hookimpl
    def clusterpulse_add_commands(self, cli: click.Group, plugins: PluginHost) -> None:
        """``clusterpulse metricsource eval`` and ``clusterpulse expr``, over the enabled plugins' vocabulary."""
        from clusterpulse_metricsource.catalog import Catalog
        from clusterpulse_metricsource.cli import make_metricsource_group
        from clusterpulse_metricsource.cli_expr import make_expr_command

        cli.add_command(make_metricsource_group(lambda: Catalog.from_contributions(plugins.contributions)))
        cli.add_command(make_expr_command(lambda: plugins.contributions.functions))
