"""The ClusterPulse plugin contract.

A plugin is a module or a class registered under the entry-point group
``clusterpulse.plugins`` and enabled by name in the config file. It implements any of the
hooks below, each marked with :data:`clusterpulse_core.hookimpl`. pluggy checks every
implementation's argument names against these specifications when the plugin is
registered, so a misspelled argument fails at start-up with the plugin's name; a
misspelled hook *name* fails too (``check_pending``).

Hooks come in five groups, called in this order during a run:

1. **Lifecycle** — ``clusterpulse_settings_class``, ``clusterpulse_configure``,
   ``clusterpulse_add_commands``, ``clusterpulse_start`` ... ``clusterpulse_stop``.
2. **Aggregate** — registry callbacks for functions used by MetricSources, alert rules,
   and the expression compiler other plugins reuse.
3. **Store** — ``clusterpulse_storage_backends``: every backend gets every piece.
4. **Collect** — ``clusterpulse_collectors``: named pieces of state per managed cluster
   (also run by the push-mode agent; ``clusterpulse_agent_connection`` and
   ``clusterpulse_agent_sources`` connect the agent, the ingester and the reconciles).
5. **Reconcile** — ``clusterpulse_resource_kinds``, ``clusterpulse_reconcile``,
   ``clusterpulse_forget``.

A hook called "per plugin" is called once for each plugin separately (the core needs to
know who answered); the others are ordinary pluggy broadcasts returning a list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from clusterpulse_core import PROJECT_NAME

if TYPE_CHECKING:
    import click
    from clusterpulse_model import (
        AgentConnection,
        AggregationResults,
        Alert,
        ClusterMetrics,
        CollectedResource,
        HealthVerdict,
    )
    from clusterpulse_model.policy import StoredPolicy

    from clusterpulse_core.collect import Collector
    from clusterpulse_core.config import Config
    from clusterpulse_core.context import ReconcileContext, Runtime
    from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
    from clusterpulse_core.plugins import PluginHost
    from clusterpulse_core.store import StorageBackend

hookspec = pluggy.HookspecMarker(PROJECT_NAME)


class Register(Protocol):
    """The callback handed to the registry hooks: ``register(name, impl, **meta)``.

    Registering a name twice, in one plugin or two, is a start-up error naming both
    plugins.
    """

    def __call__(self, name: str, impl: Any, /, **meta: Any) -> None: ...


class CompiledExpression(Protocol):
    """A compiled expression, as returned by the compiler of ``clusterpulse_expression_compiler``."""

    #: The identifiers the expression reads, unique, in order of first appearance.
    references: tuple[str, ...]

    def evaluate(self, values: Mapping[str, Any] | None) -> Any:
        """The expression's value with identifiers looked up in ``values`` (missing ones are null)."""


class ExpressionCompiler(Protocol):
    """``compile(text, functions)``: what ``clusterpulse_expression_compiler`` returns."""

    def __call__(self, text: str, functions: Mapping[str, Any], /) -> CompiledExpression: ...


# --------------------------------------------------------------------------- lifecycle


@hookspec
def clusterpulse_settings_class() -> type | None:
    """Return the attrs class that validates this plugin's ``[plugins.<name>]`` section.

    Called per plugin, before configuration. Make fields with
    :func:`clusterpulse_core.config.setting` (``env=``, ``minimum=``, ``secret=``,
    ``choices=``, ``check=``, ``help=``): the environment variable overrides the file (with
    the upstream parsing rules), values below the minimum are refused in the file and raised
    to it from the environment, secrets are masked in ``config show``, and ``choices`` /
    ``check`` refuse unusable values with the key path. Return ``None`` for no settings.
    """


@hookspec
def clusterpulse_configure(config: Config, settings: Any) -> None:
    """Receive the validated configuration, once, before anything runs.

    Called per plugin: ``settings`` is this plugin's own validated settings object (or
    ``None``); ``config`` is the whole configuration, for core settings such as the watch
    namespace. Raise :class:`clusterpulse_core.config.ConfigError` for settings that are
    valid one by one but not together.
    """


@hookspec
def clusterpulse_add_commands(cli: click.Group, plugins: PluginHost) -> None:
    """Add subcommands to the ``clusterpulse`` command line (``cli.add_command(...)``).

    ``plugins`` are the loaded, configured plugins: a command that needs what other plugins
    contribute (``plugins.contributions.functions``...) reads it from there when it runs.
    """


@hookspec
def clusterpulse_start(runtime: Runtime) -> None:
    """The manager is starting: open connections, start background threads.

    ``runtime`` gives the hub client, the store, the client pool and the contributions.
    An exception here aborts start-up with the plugin's name in the message.
    """


@hookspec
def clusterpulse_stop(runtime: Runtime) -> None:
    """The manager is stopping (after in-flight reconciles finished): release resources.

    Called for every started plugin even if another one raised; must not block for long.
    """


@hookspec
def clusterpulse_storage_lost(runtime: Runtime, reason: str) -> None:
    """A storage backend lost (some of) its data, e.g. Redis restarted empty.

    Forget every cached "last done" time (the last OLM scan, a cached read of storage, ...),
    so that the next reconcile of each object writes everything again: every object is queued
    right after this call, and all keys must be back within one reconcile. Called from the
    backend's watcher thread; must not block.
    """


@hookspec
def clusterpulse_stored_names(index: str) -> Sequence[str] | None:
    """The names a storage backend holds in the index named ``index``, or None when it has none.

    Indexes: ``clusters``, ``registries`` (names), ``metricsources`` and ``policies``
    (``<namespace>/<name>``). Kind plugins read them through ``PluginHost.stored_names`` to
    answer ``clusterpulse_stored_refs``; a backend that cannot be read raises.
    """


@hookspec(firstresult=True)
def clusterpulse_stored_refs(kind: ResourceKind, runtime: Runtime) -> Sequence[ObjectRef] | None:
    """Per plugin, for the kinds it owns: the objects of ``kind`` whose state storage still holds.

    The manager's ghost sweep (at start and every ``ghost_sweep_interval``) queues every one the
    hub no longer has, and the controller forgets it as a deletion would (``clusterpulse_forget``).
    None: the plugin cannot tell (the kind is then not swept).
    """


# --------------------------------------------------------------------------- aggregate


@hookspec
def clusterpulse_register_functions(register: Register) -> None:
    """Register expression functions usable in MetricSource computed fields.

    ``register(name, fn, min_args=N, max_args=M)``: ``fn`` receives the evaluated
    arguments as Python values (``None``, ``bool``, ``int``, ``float``, ``str``) and
    returns one; ``max_args=None`` means variadic. Called once at start-up.
    :mod:`clusterpulse_model.values` converts arguments the way the built-ins do. A function
    that raises leaves the computed field ``null``; the failure is logged, counted in
    ``clusterpulse_metricsource_function_errors_total`` and shown in the MetricSource status.
    """


@hookspec
def clusterpulse_register_aggregations(register: Register) -> None:
    """Register aggregation functions usable in MetricSource ``aggregations``.

    ``register(name, fn, needs_field=True)``: ``fn(values, spec)`` receives the list of
    the (non-null) field values of the matching resources and the aggregation spec (for
    parameters such as ``percentile``), and returns the result value. The values may mix
    numbers and text: :func:`clusterpulse_model.values.numbers` keeps the numbers. A function
    that raises gives ``null`` and is reported like a failing expression function.
    """


@hookspec
def clusterpulse_register_field_types(register: Register) -> None:
    """Register MetricSource field types (``string``, ``integer``, ``quantity`` ...).

    ``register(name, convert, convert_default)``: ``convert(value)`` turns an extracted JSON
    value into the field's value and raises ``ValueError`` when it cannot;
    ``convert_default(text)`` does the same for the field's string ``default``.
    """


@hookspec
def clusterpulse_register_filter_operators(register: Register) -> None:
    """Register aggregation filter operators (``equals``, ``contains``, ``greaterThan`` ...).

    ``register(name, predicate)``: ``predicate(field_value, filter_value) -> bool``.
    """


@hookspec
def clusterpulse_register_alert_rules(register: Register) -> None:
    r"""Register alert rules, evaluated by the alerts plugin against every stored state.

    ``register(name, evaluate, severity="warning", target="cluster", for_seconds=60.0,
    threshold=None, summary="")``: ``name`` is the alert name (``NodeNotReady``);
    ``evaluate(view, threshold)`` receives a :class:`clusterpulse_model.alerting.ClusterView`
    (or a ``RegistryView`` for ``target="registry"``) and the rule's threshold (its default
    or the one set in ``[plugins.alerts.rules.<name>]``), and returns the objects it fires on
    as :class:`clusterpulse_model.alerting.Finding`\ s, or ``None`` when the view lacks what
    it needs. It is called often (after every cluster reconcile) and must be cheap and pure.
    ``severity`` is ``critical``, ``warning`` or ``info``; ``for_seconds`` is how long the
    condition must hold before the alert fires. Called once at start-up.
    """


@hookspec(firstresult=True)
def clusterpulse_expression_compiler() -> ExpressionCompiler | None:
    """Return the compiler of the MetricSource expression language, for other plugins to reuse.

    The first plugin that answers wins (the ``metricsource`` plugin provides it). The
    returned callable is ``compile(text, functions)``: ``functions`` maps function names to
    contributions (``plugins.contributions.functions``, plus any the caller adds, each with
    ``.impl`` and ``.meta`` holding ``min_args``/``max_args``). It returns a
    :class:`CompiledExpression` (``.references``, ``.evaluate(values)``) and raises an
    exception with an integer ``position`` attribute (0-based character offset, or ``None``)
    for a syntax error, an unknown function or a wrong number of arguments.
    """


# --------------------------------------------------------------------------- store


@hookspec
def clusterpulse_storage_backends() -> Sequence[StorageBackend]:
    """Return the storage backends this plugin provides (after configuration).

    Every enabled backend receives every stored piece (fan-out) through
    ``StorageBackend.store``. A backend that fails does not stop the others; its error is
    logged, counted in ``clusterpulse_store_errors_total`` and raised to the caller, so the
    reconcile is retried.
    """


@hookspec
def clusterpulse_stored_alerts() -> Sequence[Alert]:
    """Return the alerts a storage plugin holds as firing (read back, e.g. after a restart).

    The alerts plugin calls it at start so that alerts already firing before a restart
    continue firing without being announced again; ``clusterpulse alerts`` lists them.
    A plugin whose backend keeps no alerts does not implement it. May raise when the store
    cannot be read.
    """


@hookspec
def clusterpulse_stored_policies(user: str, groups: Sequence[str], service_account: bool) -> Sequence[StoredPolicy]:
    """Return the compiled access policies that apply to a principal, as the ClusterPulse API finds them.

    ``user`` is the user name (a service account's is ``system:serviceaccount:<ns>:<name>``),
    ``groups`` its groups; ``service_account`` also looks the user up as a service account.
    Highest priority first, each policy once (its highest score); ``data`` is ``None`` for a
    policy whose data is missing or unreadable (the API skips it). A plugin whose backend keeps
    no policies does not implement it; ``clusterpulse policy can-i`` reads through it. May raise
    when the store cannot be read.
    """


# --------------------------------------------------------------------------- collect


@hookspec
def clusterpulse_collectors(where: str) -> Sequence[Collector]:
    """Return collectors: each takes one managed cluster and returns pieces of its state.

    The cluster reconcile runs every registered collector in parallel for every cluster
    it reaches, and stores what they return, so a plugin can add a piece (ingresses,
    certificates...) to every cluster without touching the cluster plugin. A collector
    marked ``critical`` fails the reconcile when it raises; the others are logged and
    skipped.

    ``where`` is ``"hub"`` for a pull reconcile on the hub and ``"agent"`` inside the push-mode
    collector agent (``clusterpulse agent``), which runs the same collectors against its own
    cluster and streams the pieces to the hub's ingester. An implementation may leave the
    argument out; one that knows the difference returns its agent variant there (the
    MetricSource plugin, for instance, only collects inside an agent what the hub sent it).
    """


# --------------------------------------------------------------------------- push mode


@hookspec(firstresult=True)
def clusterpulse_agent_connection(cluster: str) -> AgentConnection | None:
    """The push-mode collector agent currently connected for ``cluster``, if any.

    Implemented by the plugin that receives agent streams (the ingester); asked by the
    cluster reconcile before it collects a ``collectionMode: push`` cluster. ``None`` means no
    agent is connected (or no plugin receives agents): the cluster is collected by pull
    (docs/compatibility.md#c3). The answer carries the agent's version and the time it was last heard
    from, so the caller can treat a silent agent as gone.
    """


@hookspec(firstresult=True)
def clusterpulse_cluster_health(metrics: ClusterMetrics) -> HealthVerdict | None:
    """The health and its reason of a reachable cluster with these totals.

    Implemented by the plugin that owns the health thresholds (the cluster plugin, with
    ``NODE_UNHEALTHY_THRESHOLD``, ``CPU_CRITICAL_THRESHOLD``, ...); asked by whatever stores a
    cluster's status from its totals, so a pushed batch gets the same verdict as a pull
    reconcile. With no implementation the upstream default thresholds apply
    (:func:`clusterpulse_model.cluster_health`).
    """


@hookspec(firstresult=True)
def clusterpulse_aggregate_resources(source_id: str,
                                     resources: Sequence[CollectedResource]) -> AggregationResults | None:
    """The aggregations of MetricSource ``source_id`` over these collected resources.

    Implemented by the plugin that owns MetricSources, with the same code its pull collection
    aggregates with; asked by the ingester for every pushed batch that carries a source's
    resources, so ``groupBy`` and every aggregation type reach storage whatever the agent
    computed (a Go agent sends numeric results only). ``None``: the source is unknown here or
    declares no aggregations; the caller then keeps what the agent sent.
    """


@hookspec
def clusterpulse_agent_sources(sources: Sequence[bytes], plugins: PluginHost) -> None:
    """Inside the collector agent: the hub sent the MetricSource definitions to evaluate.

    ``sources`` are the compiled MetricSource JSON documents of a ``ConfigUpdate`` (the same
    documents the hub stores under ``metricsource:<ns>:<name>``), replacing the previous set;
    an empty sequence clears it. The plugin that evaluates them compiles expressions and
    namespace patterns from their source text (docs/compatibility.md#c6), skips (and logs) a document it
    cannot use, and returns its collector from ``clusterpulse_collectors(where="agent")``.
    ``plugins`` gives the registered functions and aggregations to compile against.
    """


# --------------------------------------------------------------------------- reconcile


@hookspec
def clusterpulse_resource_kinds() -> Sequence[ResourceKind]:
    """Declare the custom resource kinds this plugin owns.

    Called per plugin (the core records the owner of each kind). Declarations feed
    ``clusterpulse crds`` and the runtime, which runs a list/watch informer, a rate-limited
    work queue and ``kind.workers`` workers per kind. Two plugins declaring one kind is an
    error.
    """


@hookspec(firstresult=True)
def clusterpulse_reconcile(
    kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext
) -> ReconcileResult | None:
    """Reconcile one object of a kind this plugin owns; called on the owner only.

    ``obj`` is the object as the API server returned it (raw JSON). Patch its status with
    ``ctx.patch_status``, store pieces with ``ctx.store``. Return when to come back
    (``ReconcileResult(requeue_after=seconds)``). An exception is retried with per-object
    exponential backoff, except :class:`clusterpulse_core.kinds.TerminalError`.
    Status-only updates (unchanged ``metadata.generation``) never call this hook.
    """


@hookspec(firstresult=True)
def clusterpulse_forget(
    kind: ResourceKind, ref: ObjectRef, ctx: ReconcileContext
) -> bool | ReconcileResult | None:
    """An object of a kind this plugin owns was deleted: remove its state.

    Called on the owner only, once per deletion seen (or found missing at reconcile
    time). Typically stores a deletion piece and drops caches. Exceptions are retried like
    reconcile errors. A plugin that put a finalizer on the object and is still waiting to
    clean up (an unreachable remote, say) returns ``ReconcileResult(requeue_after=seconds)``
    to be called again then, and removes its finalizer once done.
    """


@hookspec
def clusterpulse_agent_read_types() -> Sequence[tuple[str, str]]:
    """Return the ``(api group, resource)`` types a push-mode collector agent must be able to read.

    The cluster plugin gives the agent it installs on a managed cluster a ClusterRole with
    ``get/list/watch`` on its own collectors' types plus every type returned here (the
    MetricSource plugin answers with the resources of the MetricSources it has compiled).
    Called at every agent check, so it must be cheap; a new type updates the role at the
    next reconcile of each push-mode cluster. ``""`` is the core API group.
    """


#: Hooks the core calls once for each plugin, to know which plugin answered.
PER_PLUGIN_HOOKS = frozenset(
    {"clusterpulse_settings_class", "clusterpulse_configure", "clusterpulse_resource_kinds"}
)
#: Registry hooks and the contribution table each fills.
REGISTRY_HOOKS: Mapping[str, str] = {
    "clusterpulse_register_functions": "functions",
    "clusterpulse_register_aggregations": "aggregations",
    "clusterpulse_register_field_types": "field_types",
    "clusterpulse_register_filter_operators": "filter_operators",
    "clusterpulse_register_alert_rules": "alert_rules",
}
