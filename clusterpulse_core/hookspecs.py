"""The ClusterPulse framework contract: the hooks the core itself calls.

A plugin is a module or a class registered under the entry-point group
``clusterpulse.plugins`` and enabled by name in the config file. It implements any of the
hooks below, each marked with :data:`clusterpulse_core.hookimpl`. pluggy checks every
implementation's argument names against these specifications when the plugin is
registered, so a misspelled argument fails at start-up with the plugin's name; a
misspelled hook *name* fails too (a hook no loaded plugin declares).

This module holds only the framework verbs. A hook that is a channel between plugins is
declared by the plugin that owns it, through :func:`clusterpulse_addhooks` (the MetricSource
plugin declares its aggregations, field types, filter operators and expression compiler; the
alerts plugin its rules; the ingester its agent connection; ...). A caller reaches such a hook
with :meth:`clusterpulse_core.plugins.PluginHost.hook`, which answers ``None`` when the
declaring plugin is not loaded, so the caller can degrade clearly. The table of every hook,
who declares it and how it is called is generated from the specifications in
``docs/plugins.md``.

Phases, in the order a run calls them:

1. **Registration** — ``clusterpulse_addhooks``, as each plugin is registered.
2. **Configuration** — ``clusterpulse_settings_class``, then ``clusterpulse_configure``, then
   ``clusterpulse_check_config``.
3. **Registries** — ``clusterpulse_register_functions`` and the plugins' own registry hooks,
   at the first use of the contributions (start-up, or a command that needs them).
4. **Command line** — ``clusterpulse_add_commands`` (the CLI only).
5. **Start** — ``clusterpulse_resource_kinds`` (the kinds to run), ``clusterpulse_storage_backends``
   (the store is built with the runtime), then ``clusterpulse_start`` on each plugin.
6. **Running** — each kind's reconciler (``ResourceKind.reconciler``: ``reconcile``, ``forget``,
   ``stored_refs``; for a kind declared without one, the owner's ``clusterpulse_reconcile`` /
   ``clusterpulse_forget`` / ``clusterpulse_stored_refs``), each call made through
   ``clusterpulse_reconcile_call`` so that wrappers run around it; ``clusterpulse_managed_cluster``
   when a reconcile opens a managed cluster; ``clusterpulse_collectors`` per managed cluster;
   ``clusterpulse_stored_names`` and ``clusterpulse_storage_lost`` from the store.
7. **Stop** — ``clusterpulse_stop`` on each started plugin, in reverse load order.

How each hook is called is part of its contract: *each plugin* (the core calls the plugins one
at a time, in load order, and knows who answered), *all results* (one pluggy call, a list of
every answer, the last-loaded plugin's first: ``tryfirst=True`` / ``trylast=True`` on an
implementation moves it), *first result* (the first non-``None`` answer wins: ``tryfirst=True``
takes precedence over an earlier answer), *owner only* (the plugin that declared the kind),
*wrapped* (the core's own implementation does the work; plugins add pluggy wrappers,
``@hookimpl(wrapper=True)``, that run around it: only ``clusterpulse_reconcile_call``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pluggy

from clusterpulse_core import PROJECT_NAME

if TYPE_CHECKING:
    import click

    from clusterpulse_core.collect import Collector
    from clusterpulse_core.config import Config
    from clusterpulse_core.context import ManagedClusterAddress, ReconcileContext, Runtime
    from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
    from clusterpulse_core.kube.client import KubeClient
    from clusterpulse_core.plugins import PluginHost
    from clusterpulse_core.store import StorageBackend

hookspec = pluggy.HookspecMarker(PROJECT_NAME)

_F = TypeVar("_F", bound=Callable[..., Any])

#: Attribute a registry hookspec carries: the contribution table it fills.
REGISTRY_ATTRIBUTE = f"{PROJECT_NAME}_registry"
#: Attribute a hookspec carries: how the hook is called (the hookspec table's last column).
CALLED_ATTRIBUTE = f"{PROJECT_NAME}_called"


def registry(table: str) -> Callable[[_F], _F]:
    """Mark a hookspec as a registry hook filling the contribution table ``table``.

    The core calls a registry hook on each plugin implementing it with a :class:`Register`
    callback, and collects what it registers into ``plugins.contributions.<table>`` (a name
    registered twice is an error naming both plugins). A plugin declaring its own registry::

        @hookspec
        @registry("aggregations")
        def clusterpulse_register_aggregations(register: Register) -> None: ...
    """

    def mark(function: _F) -> _F:
        setattr(function, REGISTRY_ATTRIBUTE, table)
        setattr(function, CALLED_ATTRIBUTE, f"each plugin, in load order, with register(); fills contributions.{table}")
        return function

    return mark


def called(how: str) -> Callable[[_F], _F]:
    """Say how a hook is called (each plugin / all results / first result / owner only, and order).

    Shown in the hookspec table of ``docs/plugins.md``; a spec without it is described from its
    pluggy options (``firstresult``, ``historic``).
    """

    def mark(function: _F) -> _F:
        setattr(function, CALLED_ATTRIBUTE, how)
        return function

    return mark


class HookDeclarer(Protocol):
    """What ``clusterpulse_addhooks`` receives: ``add_hookspecs(module_or_class)``, as pluggy's manager has.

    The specifications are added right after the declaring plugin is registered, before any other
    plugin registers and before unknown hooks are refused; implementations registered earlier are
    checked against them then, and a mismatch names the implementing plugin.
    """

    def add_hookspecs(self, module_or_class: ModuleType | type, /) -> None:
        """Declare the hooks specified (``@hookspec``) in ``module_or_class``."""


class Register(Protocol):
    """The callback handed to the registry hooks: ``register(name, impl, **meta)``.

    Registering a name twice, in one plugin or two, is a start-up error naming both
    plugins.
    """

    def __call__(self, name: str, impl: Any, /, **meta: Any) -> None: ...


# --------------------------------------------------------------------------- 1. registration


@hookspec(historic=True)
@called("historic: each plugin as it is registered, before its other hooks are checked")
def clusterpulse_addhooks(pluginmanager: HookDeclarer) -> None:
    """Declare this plugin's own hooks: ``pluginmanager.add_hookspecs(my_hookspecs_module)``.

    Called on each plugin as it is registered (a historic hook, like pytest's
    ``pytest_addhooks``), so the hooks exist before any implementation of them is checked,
    whatever the load order. Mark the specs with ``clusterpulse_core.hookspecs.hookspec`` (and
    :func:`registry` for a registry hook). A plugin that implements a hook declared by another
    plugin, which may not be loaded, marks the implementation ``@hookimpl(optionalhook=True)``;
    a caller reaches such a hook with :meth:`clusterpulse_core.plugins.PluginHost.hook`.
    """


# --------------------------------------------------------------------------- 2. configuration


@hookspec
@called("each plugin, in load order, before configuration")
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
@called("each plugin, in load order, with its own settings")
def clusterpulse_configure(config: Config, settings: Any) -> None:
    """Receive the validated configuration, once, before anything runs.

    Called per plugin: ``settings`` is this plugin's own validated settings object (or
    ``None``); ``config`` is the whole configuration, for core settings such as the watch
    namespace. Raise :class:`clusterpulse_core.config.ConfigError` for settings that are
    valid one by one but not together.
    """


@hookspec
@called("each plugin, in load order, once every plugin is configured (by run and config check alike)")
def clusterpulse_check_config(config: Config, plugins: PluginHost) -> Sequence[str] | None:
    """Problems that only show with the other plugins configured: one line each, naming the keys.

    Called after ``clusterpulse_configure`` has reached every plugin, by the one validation path
    (:func:`clusterpulse_core.runtime.bootstrap.diagnose`), so ``config check`` reports what ``run``
    refuses to start with. ``plugins`` answers another plugin's hooks (``plugins.hook(name)``),
    which give that plugin's view of its own settings without importing it. Return ``None`` or an
    empty list when all is well; raising is reported as a problem naming this plugin.
    """


# --------------------------------------------------------------------------- 3. registries


@hookspec
@registry("functions")
def clusterpulse_register_functions(register: Register) -> None:
    """Register expression functions usable in MetricSource computed fields.

    ``register(name, fn, min_args=N, max_args=M)``: ``fn`` receives the evaluated
    arguments as Python values (``None``, ``bool``, ``int``, ``float``, ``str``) and
    returns one; ``max_args=None`` means variadic. Called once at start-up.
    :mod:`clusterpulse_model.values` converts arguments the way the built-ins do. A function
    that raises leaves the computed field ``null``; the failure is logged, counted in
    ``clusterpulse_metricsource_function_errors_total`` and shown in the MetricSource status.
    """


# --------------------------------------------------------------------------- 4. command line


@hookspec
@called("all results, when the command line is built")
def clusterpulse_add_commands(cli: click.Group, plugins: PluginHost) -> None:
    """Add subcommands to the ``clusterpulse`` command line (``cli.add_command(...)``).

    ``plugins`` are the loaded, configured plugins: a command that needs what other plugins
    contribute (``plugins.contributions.functions``...) reads it from there when it runs.
    """


# --------------------------------------------------------------------------- 5. start


@hookspec
@called("each plugin, in load order; a kind declared twice is an error")
def clusterpulse_resource_kinds() -> Sequence[ResourceKind]:
    """Declare the custom resource kinds this plugin owns, each with the object reconciling it.

    ``KIND.with_reconciler(self.reconciler)``: a
    :class:`clusterpulse_core.kinds.Reconciler` (``reconcile``, ``forget``, ``stored_refs``) the
    runtime calls for that kind's objects only.

    Called per plugin (the core records the owner of each kind). Declarations feed
    ``clusterpulse crds`` and the runtime, which runs a list/watch informer, a rate-limited
    work queue and ``kind.workers`` workers per kind. Two plugins declaring one kind is an
    error.
    """


@hookspec
@called("all results, once, when the runtime is built (before clusterpulse_start)")
def clusterpulse_storage_backends() -> Sequence[StorageBackend]:
    """Return the storage backends this plugin provides (after configuration).

    Every enabled backend receives every stored piece (fan-out) through
    ``StorageBackend.store``. A backend that fails does not stop the others; its error is
    logged, counted in ``clusterpulse_store_errors_total`` and raised to the caller, so the
    reconcile is retried.
    """


@hookspec
@called("each plugin, in load order; a failure stops those started, in reverse")
def clusterpulse_start(runtime: Runtime) -> None:
    """The manager is starting: open connections, start background threads.

    ``runtime`` gives the hub client, the store, the client pool and the contributions.
    An exception here aborts start-up with the plugin's name in the message.
    """


# --------------------------------------------------------------------------- 6. running


@hookspec(firstresult=True)
@called("owner only, per object, for a kind declared without a reconciler (the earlier contract)")
def clusterpulse_reconcile(kind: ResourceKind, obj: Mapping[str, Any], ctx: ReconcileContext) -> ReconcileResult | None:
    """Reconcile one object of a kind this plugin owns and declared without a reconciler.

    The earlier contract, kept working: a kind declares the object that reconciles it instead
    (``ResourceKind.reconciler``, a :class:`clusterpulse_core.kinds.Reconciler`), and then this
    hook is not called for it. Called on the owner only.

    ``obj`` is the object as the API server returned it (raw JSON). Patch its status with
    ``ctx.patch_status``, store pieces with ``ctx.store``. Return when to come back
    (``ReconcileResult(requeue_after=seconds)``). An exception is retried with per-object
    exponential backoff, except :class:`clusterpulse_core.kinds.TerminalError`.
    Status-only updates (unchanged ``metadata.generation``) never call this hook.
    """


@hookspec(firstresult=True)
@called("owner only, per deleted object, for a kind declared without a reconciler")
def clusterpulse_forget(kind: ResourceKind, ref: ObjectRef, ctx: ReconcileContext) -> bool | ReconcileResult | None:
    """An object of a kind this plugin owns (declared without a reconciler) was deleted: remove its state.

    The earlier contract: ``Reconciler.forget`` of the kind's reconciler replaces it.

    Called on the owner only, once per deletion seen (or found missing at reconcile
    time). Typically stores a deletion piece and drops caches. Exceptions are retried like
    reconcile errors. A plugin that put a finalizer on the object and is still waiting to
    clean up (an unreachable remote, say) returns ``ReconcileResult(requeue_after=seconds)``
    to be called again then, and removes its finalizer once done.
    """


@hookspec(firstresult=True)
@called("owner only, at each ghost sweep, for a kind declared without a reconciler")
def clusterpulse_stored_refs(kind: ResourceKind, runtime: Runtime) -> Sequence[ObjectRef] | None:
    """For the kinds it owns (declared without a reconciler): the objects of ``kind`` whose state storage
    still holds. The earlier contract: ``Reconciler.stored_refs`` replaces it.

    The manager's ghost sweep (at start and every ``ghost_sweep_interval``) queues every one the
    hub no longer has, and the controller forgets it as a deletion would (``clusterpulse_forget``).
    None: the plugin cannot tell (the kind is then not swept).
    """


@hookspec(firstresult=True)
@called(
    "wrapped: per reconcile or forget of any kind; the core's implementation (trylast) makes the call, "
    "the core's wrapper (tryfirst, outermost) sets the object's log context, plugins' wrappers run inside it"
)
def clusterpulse_reconcile_call(
    kind: ResourceKind, ref: ObjectRef, action: str, ctx: ReconcileContext, call: Callable[[], Any]
) -> Any:
    """Around every call of a kind's reconciler: ``call()`` reconciles (``action == "reconcile"``) or
    forgets (``action == "forget"``) object ``ref`` and returns what the reconciler returned.

    Called by the runtime's workers and by ``clusterpulse run --once``, in the thread that runs the
    reconcile. The core implements it twice: a plain implementation (``trylast``) that makes the
    call, and a wrapper (``tryfirst``, so outermost) that names ``ref`` in every line logged in
    that thread meanwhile, from any logger (``clusterpulse_core.logs.CURRENT_OBJECT``).

    Implement it only as a wrapper, ``@hookimpl(wrapper=True)``: a generator that yields once
    and returns the value it got back (``return (yield)``). A wrapper may observe and time the call
    (a tracing span, a metric), add context around it, and see its exception (the ``yield`` raises
    it; re-raise it, or raise another: the runtime retries as for the reconciler's own). It must not
    swallow an exception or change the result, which is the reconciler's answer to the runtime, and
    must not block. A plain implementation would answer instead of the reconciler: it is refused
    at start-up, naming the plugin.
    """


@hookspec(firstresult=True)
@called("first result, per ReconcileContext.managed_cluster call")
def clusterpulse_managed_cluster(name: str, namespace: str, hub: KubeClient) -> ManagedClusterAddress | None:
    """Where managed cluster ``name``, declared in ``namespace`` of the hub, is: its endpoint and its
    credentials Secret (a :class:`clusterpulse_core.context.ManagedClusterAddress`).

    Called by :meth:`ReconcileContext.managed_cluster <clusterpulse_core.context.ReconcileContext.managed_cluster>`,
    from a reconcile of any kind, each time a block opens: the plugin owning the clusters (the cluster plugin)
    answers it, so the core reads no cluster object itself. ``None``: not a cluster this plugin
    knows. Raise :class:`clusterpulse_core.context.ManagedClusterError` for one it knows that cannot
    be reached (no endpoint), naming why; the hub client's errors propagate.
    """


@hookspec
@called("all results, when a reconcile or the agent collects; names unique")
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


@hookspec
@called("all results (every backend's answer, merged)")
def clusterpulse_stored_names(index: str) -> Sequence[str] | None:
    """The names a storage backend holds in the index named ``index``, or None when it has none.

    Indexes: ``clusters``, ``registries`` (names), ``metricsources`` and ``policies``
    (``<namespace>/<name>``). Kind plugins read them through ``PluginHost.stored_names`` to
    answer ``clusterpulse_stored_refs``; a backend that cannot be read raises.
    """


@hookspec
@called("each plugin, in load order, from the backend's watcher thread")
def clusterpulse_storage_lost(runtime: Runtime, reason: str) -> None:
    """A storage backend lost (some of) its data, e.g. Redis restarted empty.

    Forget every cached "last done" time (the last OLM scan, a cached read of storage, ...),
    so that the next reconcile of each object writes everything again: every object is queued
    right after this call, and all keys must be back within one reconcile. Called from the
    backend's watcher thread; must not block.
    """


# --------------------------------------------------------------------------- 7. stop


@hookspec
@called("each started plugin, in reverse load order, even if one raised")
def clusterpulse_stop(runtime: Runtime) -> None:
    """The manager is stopping (after in-flight reconciles finished): release resources.

    Called for every started plugin even if another one raised; must not block for long.
    """


#: Hooks the core declared before they moved to the plugins that own them (the hookspec table of
#: docs/plugins.md says which). A plugin implementing one while no loaded plugin declares it is
#: warned (the implementation is never called), not refused, so plugins written against the
#: older contract keep loading.
MOVED_HOOKS = frozenset(
    {
        "clusterpulse_register_aggregations",
        "clusterpulse_register_field_types",
        "clusterpulse_register_filter_operators",
        "clusterpulse_expression_compiler",
        "clusterpulse_aggregate_resources",
        "clusterpulse_register_alert_rules",
        "clusterpulse_stored_alerts",
        "clusterpulse_agent_connection",
        "clusterpulse_agent_sources",
        "clusterpulse_agent_read_types",
        "clusterpulse_cluster_health",
        "clusterpulse_stored_policies",
    }
)
