"""Discovery (stevedore, names from config) and registration (pluggy) of plugins."""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

import attrs
import pluggy
from stevedore import NamedExtensionManager

from clusterpulse_core import CORE_API_VERSION, PROJECT_NAME, envvars, hookspecs
from clusterpulse_core.collect import Collector
from clusterpulse_core.config import Config, did_you_mean
from clusterpulse_core.contributions import Contribution, Contributions, DuplicateContributionError
from clusterpulse_core.corehooks import CoreHooks
from clusterpulse_core.kinds import ObjectRef, Reconciler, ReconcileResult, ResourceKind
from clusterpulse_core.store import StorageBackend

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "clusterpulse.plugins"
#: Entry points of plugin defaults (:class:`PluginDefaults`): what a distribution enables when the
#: config names no plugins (ClusterPulse's own plugins are declared by clusterpulse-model).
DEFAULTS_ENTRY_POINT_GROUP = "clusterpulse.defaults"
#: Entry points of command providers: objects implementing ``clusterpulse_add_commands`` only, whose
#: commands are tools of the distribution that installs them (``demo``, ``testing kube-api``,
#: ``plugin new``). Always loaded by the command line, never enabled or run as plugins.
COMMANDS_ENTRY_POINT_GROUP = "clusterpulse.commands"
#: Every hook name the core specifies.
HOOK_NAMES = frozenset(
    name for name in dir(hookspecs) if name.startswith(f"{PROJECT_NAME}_") and callable(getattr(hookspecs, name))
)
#: Who declares the core's hooks, in :meth:`PluginHost.hookspec_table`.
CORE = "core"


@attrs.frozen
class HookSpecRow:
    """One row of the hookspec table: a hook, who declares it, how it is called."""

    hook: str
    declared_by: str
    called: str


class PluginError(Exception):
    """A plugin could not be found, imported, registered or called; names the plugin."""


@attrs.frozen
class InstalledPlugin:
    """One entry point of the ``clusterpulse.plugins`` group."""

    name: str
    target: str
    distribution: str
    version: str


def installed_plugins() -> list[InstalledPlugin]:
    """Every installed plugin entry point, sorted by name."""
    found = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        found.append(
            InstalledPlugin(
                name=ep.name,
                target=ep.value,
                distribution=dist.name if dist else "?",
                version=dist.version if dist else "?",
            )
        )
    return sorted(found, key=lambda p: p.name)


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(name) for name in names)


@attrs.frozen
class PluginDefaults:
    """The plugins enabled when the config names none, declared by the distribution that publishes them.

    Registered under the entry-point group ``clusterpulse.defaults`` (the core names no plugin).
    With no ``plugins`` list configured, the installed ones of ``plugins`` are enabled in that
    order and the missing ones skipped with install advice; third-party plugins are enabled
    only by name. ``enabling_env`` maps a plugin to the upstream environment variable that
    switches its feature on: when true, the plugin is enabled (if installed) even if an
    explicit list leaves it out.
    """

    plugins: tuple[str, ...] = attrs.field(converter=_names)
    enabling_env: Mapping[str, str] = attrs.field(factory=dict)


def plugin_defaults() -> PluginDefaults:
    """The installed :class:`PluginDefaults` merged (by entry-point name; a broken one is logged and skipped)."""
    plugins: dict[str, None] = {}
    enabling_env: dict[str, str] = {}
    for ep in sorted(importlib.metadata.entry_points(group=DEFAULTS_ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        try:
            found = ep.load()
        except Exception as exc:
            log.warning(
                "plugin defaults %r (%s) could not be loaded: %s: %s", ep.name, ep.value, type(exc).__name__, exc
            )
            continue
        if not isinstance(found, PluginDefaults):
            log.warning("plugin defaults %r (%s) is not a PluginDefaults: ignored", ep.name, ep.value)
            continue
        plugins.update(dict.fromkeys(found.plugins))
        enabling_env.update(found.enabling_env)
    return PluginDefaults(tuple(plugins), enabling_env)


@attrs.frozen
class CommandProviders:
    """The installed command providers, registered on a plugin manager of their own.

    ``pm.hook.clusterpulse_add_commands`` calls them; ``failures`` maps an entry point that
    could not be loaded or registered to why.
    """

    pm: pluggy.PluginManager
    failures: Mapping[str, str]


def command_providers() -> CommandProviders:
    """Load every entry point of :data:`COMMANDS_ENTRY_POINT_GROUP`, checked against the hookspecs."""
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    failures: dict[str, str] = {}
    for ep in sorted(importlib.metadata.entry_points(group=COMMANDS_ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        dist = getattr(ep, "dist", None)
        label = f"commands {ep.name!r} of {dist.name if dist else ep.value}"
        try:
            provider = ep.load()
            if inspect.isclass(provider):
                provider = provider()
            pm.register(provider, name=f"{COMMANDS_ENTRY_POINT_GROUP}:{ep.name}")
        except Exception as exc:
            failures[ep.name] = f"{label} could not be loaded: {type(exc).__name__}: {exc}"
    return CommandProviders(pm, failures)


def distribution_for(name: str) -> str:
    """The distribution conventionally providing plugin ``name``."""
    return f"clusterpulse-{name}"


def not_installed(
    name: str, installed: Sequence[InstalledPlugin] | None = None, defaults: PluginDefaults | None = None
) -> str:
    """Why plugin ``name`` cannot be loaded, and the fix, for a name with no entry point.

    Tells apart a distribution installed without the entry point, a misspelled name (did you
    mean ...), and a plugin that is not installed; install advice only for the published
    plugins (those of the installed :class:`PluginDefaults`).
    """
    plugins = installed_plugins() if installed is None else list(installed)
    names = [plugin.name for plugin in plugins]
    for candidate in dict.fromkeys((name, distribution_for(name))):
        try:
            dist = importlib.metadata.distribution(candidate)
        except importlib.metadata.PackageNotFoundError:
            continue
        declared = sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)
        hint = did_you_mean(name.removeprefix(f"{PROJECT_NAME}-"), declared)
        return (
            f"plugin {name!r} is enabled but not found: {hint}distribution {dist.metadata['Name']} "
            f"{dist.version} is installed without an entry point named {name!r} in the group "
            f"{ENTRY_POINT_GROUP!r} (it declares: {', '.join(declared) or 'none'}; add "
            f'[project.entry-points."{ENTRY_POINT_GROUP}"] {name} = "module:Plugin" to its '
            f"pyproject.toml and reinstall it)"
        )
    if name in (plugin_defaults() if defaults is None else defaults).plugins:
        return f"plugin {name!r} is enabled but not installed (pip install {distribution_for(name)})"
    hint = did_you_mean(name, names)
    return f"plugin {name!r} is enabled but not installed ({hint}installed plugins: {', '.join(names) or 'none'})"


@attrs.frozen
class PluginPlan:
    """Which plugins to load, and which of the project's plugins were left out and why."""

    names: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    #: Whether ``names`` came from an explicit ``plugins`` list (else: the project's defaults).
    explicit: bool = False


def plan_plugins(
    configured: Sequence[str] | None,
    env: Mapping[str, str],
    installed: Iterable[str] | None = None,
    defaults: PluginDefaults | None = None,
) -> PluginPlan:
    """The plugins to load for a configured list (``None`` = not configured).

    Not configured: the default plugins (``defaults``, else the installed
    :class:`PluginDefaults`) that are installed, in that order; the missing ones are skipped
    with a reason. Configured: exactly that list (a missing plugin is then a load error).
    Either way, an upstream variable such as ``VM_ENABLED=true`` adds its plugin when installed.
    """
    available = set(p.name for p in installed_plugins()) if installed is None else set(installed)
    defaults = plugin_defaults() if defaults is None else defaults
    skipped: list[tuple[str, str]] = []
    if configured is None:
        names = []
        for name in defaults.plugins:
            if name in available:
                names.append(name)
            else:
                skipped.append((name, f"not installed (pip install {distribution_for(name)})"))
    else:
        names = list(configured)
    for name, variable in defaults.enabling_env.items():
        if name in names or not envvars.parse_bool(env.get(variable, ""), False):
            continue
        if name in available:
            names.append(name)
        else:
            skipped = [s for s in skipped if s[0] != name]
            skipped.append(
                (name, f"{variable} is set but the plugin is not installed (pip install {distribution_for(name)})")
            )
    return PluginPlan(tuple(names), tuple(skipped), configured is not None)


class _RegistrationFailed(Exception):
    """A plugin's registration hook raised (internal: becomes a PluginError or a broken plugin)."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.message = message


class HookReconciler:
    """The :class:`~clusterpulse_core.kinds.Reconciler` of a kind declared without one: the owning
    plugin's ``clusterpulse_reconcile`` / ``clusterpulse_forget`` / ``clusterpulse_stored_refs``
    hooks, called on that plugin only (the earlier contract, kept so such plugins keep working)."""

    def __init__(self, host: PluginHost, owner: str, kind: ResourceKind) -> None:
        self.host = host
        self.owner = owner
        self.kind = kind

    def reconcile(self, obj: Mapping[str, Any], ctx: Any) -> ReconcileResult | None:
        """``clusterpulse_reconcile`` of the owner."""
        result: ReconcileResult | None = self.host.call_owner(
            "clusterpulse_reconcile", self.owner, kind=self.kind, obj=obj, ctx=ctx
        )
        return result

    def forget(self, ref: ObjectRef, ctx: Any) -> bool | ReconcileResult | None:
        """``clusterpulse_forget`` of the owner."""
        result: bool | ReconcileResult | None = self.host.call_owner(
            "clusterpulse_forget", self.owner, kind=self.kind, ref=ref, ctx=ctx
        )
        return result

    def stored_refs(self, runtime: Any) -> Sequence[ObjectRef] | None:
        """``clusterpulse_stored_refs`` of the owner."""
        result: Sequence[ObjectRef] | None = self.host.call_owner(
            "clusterpulse_stored_refs", self.owner, kind=self.kind, runtime=runtime
        )
        return result


class _Declarations:
    """The ``pluginmanager`` handed to ``clusterpulse_addhooks``: collects what a plugin declares."""

    def __init__(self) -> None:
        self._pending: list[ModuleType | type] = []

    def add_hookspecs(self, module_or_class: ModuleType | type, /) -> None:
        """Declare the hooks of ``module_or_class`` (added once the plugin is registered)."""
        self._pending.append(module_or_class)

    def take(self) -> list[ModuleType | type]:
        """The declarations made since the last call."""
        pending, self._pending = self._pending, []
        return pending


class PluginHost:
    """The loaded plugins: a pluggy manager plus what the core learned from them.

    ``names`` are entry-point names loaded in order (what the config enables); ``extra``
    maps names to plugin objects registered directly (used by tests and embedders).

    ``tolerant=True`` (the command line's diagnostics) loads every plugin it can and records
    why the others failed in :attr:`failures` instead of raising.
    """

    def __init__(self, names: Sequence[str], extra: Mapping[str, object] | None = None, tolerant: bool = False) -> None:
        self.pm = pluggy.PluginManager(PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        # The core's own implementations (clusterpulse_reconcile_call): not a plugin of the run.
        self.pm.register(CoreHooks(), name=CORE)
        # Historic: every plugin registered from now on declares its own hooks as it registers.
        self._declarations = _Declarations()
        self.pm.hook.clusterpulse_addhooks.call_historic(kwargs={"pluginmanager": self._declarations})
        self.order: list[str] = []
        #: Hook name -> the plugin that declared it (``core`` for the framework's own).
        self.declared_by: dict[str, str] = {name: CORE for name in HOOK_NAMES}
        #: Plugin name -> why it could not be loaded (only filled when ``tolerant``).
        self.failures: dict[str, str] = {}
        #: What a plugin forgot but loads without (a hook not marked ``@hookimpl``, no API version).
        self.warnings: list[str] = []
        self._tolerant = tolerant
        self._contributions: Contributions | None = None
        self._kinds: dict[str, tuple[str, ResourceKind]] | None = None
        for name, obj in self._load(names):
            self._guard(name, functools.partial(self._register, name, obj))
        for name, obj in (extra or {}).items():
            self._guard(name, functools.partial(self._register, name, obj))
        self._check_pending()

    def _check_pending(self) -> None:
        """Refuse an implementation of a hook no loaded plugin declares (a misspelled name).

        pluggy's ``check_pending``, except for a hook that moved from the core to a plugin
        (:data:`~clusterpulse_core.hookspecs.MOVED_HOOKS`) whose declarer is not loaded: that
        implementation is never called, and the plugin is warned, not refused.
        """
        for name in list(self.order):
            obj = self.pm.get_plugin(name)
            for caller in self.pm.get_hookcallers(obj) or []:
                if caller.has_spec() or not any(
                    impl.plugin is obj and not impl.optionalhook for impl in caller.get_hookimpls()
                ):
                    continue
                if caller.name in hookspecs.MOVED_HOOKS:
                    self._warn(
                        f"plugin {name!r} implements {caller.name}, which no loaded plugin declares (it moved "
                        f"from the core to the plugin that owns it, see docs/plugins.md#hookspec-table): it "
                        f"is never called (enable that plugin, or mark it @hookimpl(optionalhook=True))"
                    )
                    continue
                hint = did_you_mean(caller.name, sorted(self.declared_by))
                error = PluginError(
                    f"plugin {name!r}: unknown hook {caller.name!r} in plugin {obj!r} "
                    f"({hint}no loaded plugin declares it)"
                )
                if not self._tolerant:
                    raise error
                self.failures[name] = str(error)
                self.pm.unregister(obj)
                self.order.remove(name)
                break

    def _guard(self, name: str, action: Any) -> None:
        try:
            action()
        except PluginError as exc:
            if not self._tolerant:
                raise
            self.failures[name] = str(exc)

    # ------------------------------------------------------------------ loading

    def _load(self, names: Sequence[str]) -> list[tuple[str, object]]:
        if not names:
            return []
        twice = sorted({n for n in names if list(names).count(n) > 1})
        if twice:
            raise PluginError("; ".join(f"plugin {n!r} is enabled twice" for n in twice))
        failures: list[str] = []
        missing: list[str] = []

        def on_failure(_mgr: Any, ep: Any, exc: BaseException) -> None:
            message = f"plugin {ep.name!r} ({ep.value}) failed to import: {type(exc).__name__}: {exc}"
            failures.append(message)
            self.failures[ep.name] = message

        def on_missing(names_missing: Iterable[str]) -> None:
            missing.extend(sorted(names_missing))

        manager = NamedExtensionManager(
            ENTRY_POINT_GROUP,
            list(names),
            name_order=True,
            invoke_on_load=False,
            on_load_failure_callback=on_failure,
            on_missing_entrypoints_callback=on_missing,
        )
        for name in missing:  # stevedore also calls a plugin that failed to import "missing"
            self.failures.setdefault(name, not_installed(name))
        if not self._tolerant and (failures or missing):
            raise PluginError("; ".join(self.failures.values()))
        return [(ext.name, ext.plugin) for ext in manager.extensions]

    def _register(self, name: str, obj: object) -> None:
        if inspect.isclass(obj):
            try:
                obj = obj()
            except Exception as exc:
                raise PluginError(f"plugin {name!r} failed to initialise: {type(exc).__name__}: {exc}") from exc
        self._check_declarations(name, obj)
        wanted = getattr(obj, "clusterpulse_api_version", CORE_API_VERSION)
        if int(wanted) != CORE_API_VERSION:
            raise PluginError(f"plugin {name!r} needs core API version {wanted}, this core provides {CORE_API_VERSION}")
        try:
            self.pm.register(obj, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name!r}: {exc}") from exc
        except ValueError as exc:
            raise PluginError(f"plugin {name!r} could not be registered: {exc}") from exc
        except Exception as exc:  # its clusterpulse_addhooks raised
            self._declarations.take()
            if self.pm.is_registered(obj):
                self.pm.unregister(obj)
            raise PluginError(f"plugin {name!r} failed to register: {type(exc).__name__}: {exc}") from exc
        plain = [
            impl
            for impl in self.pm.hook.clusterpulse_reconcile_call.get_hookimpls()
            if impl.plugin is obj and not (impl.wrapper or impl.hookwrapper)
        ]
        if plain:
            self._declarations.take()
            self.pm.unregister(obj)
            raise PluginError(
                f"plugin {name!r} implements clusterpulse_reconcile_call without wrapper=True: it would answer "
                f"instead of the reconciler (mark it @hookimpl(wrapper=True) and `return (yield)`)"
            )
        self.order.append(name)
        try:
            for module in self._declarations.take():
                self._declare(name, module)
        except PluginError:
            self.pm.unregister(obj)
            self.order.remove(name)
            raise

    def _declare(self, name: str, module: ModuleType | type) -> None:
        """Add the hooks plugin ``name`` declares (``clusterpulse_addhooks``), checking the implementations
        already registered against them first, so a mismatch names the implementing plugin."""
        probe = pluggy.PluginManager(PROJECT_NAME)
        probe.add_hookspecs(module)
        declared = sorted(
            hook
            for hook, caller in vars(probe.hook).items()
            if isinstance(caller, pluggy.HookCaller) and caller.has_spec()
        )
        taken = [hook for hook in declared if hook in self.declared_by]
        if taken:
            raise PluginError(
                f"plugin {name!r} declares hook {taken[0]!r}, already declared by {self.declared_by[taken[0]]!r}"
            )
        for other in list(self.order):
            plugin = self.pm.get_plugin(other)
            try:
                probe.register(plugin, name=other)
            except pluggy.PluginValidationError as exc:
                error = PluginError(f"plugin {other!r}: {exc}")
                if not self._tolerant or other == name:
                    raise error from exc
                self.failures[other] = str(error)
                self.pm.unregister(plugin)
                self.order.remove(other)
        self.pm.add_hookspecs(module)
        for hook in declared:
            self.declared_by[hook] = name

    def _specified(self) -> set[str]:
        """The names of the hooks with a specification (declared by the core or a loaded plugin)."""
        return {
            name
            for name, caller in vars(self.pm.hook).items()
            if isinstance(caller, pluggy.HookCaller) and caller.has_spec()
        }

    def _check_declarations(self, name: str, obj: object) -> None:
        """Warn about what a plugin forgot but still loads without: ``@hookimpl``, the API version."""
        marker = f"{PROJECT_NAME}_impl"
        undecorated = sorted(
            attr
            for attr in dir(obj)
            if attr.startswith(f"{PROJECT_NAME}_")
            and (attr in HOOK_NAMES or attr in hookspecs.MOVED_HOOKS or hasattr(self.pm.hook, attr))
            and callable(getattr(obj, attr, None))
            and not hasattr(getattr(obj, attr), marker)
        )
        for attr in undecorated:
            self._warn(
                f"plugin {name!r}: {attr} is not marked with @hookimpl, so it is never called "
                f"(decorate it with `from clusterpulse_core import hookimpl`)"
            )
        if not hasattr(obj, "clusterpulse_api_version"):
            self._warn(
                f"plugin {name!r} does not declare clusterpulse_api_version "
                f"(add `clusterpulse_api_version = {CORE_API_VERSION}`, the core API it is written for)"
            )

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        if not self._tolerant:
            log.warning("%s", message)

    # ------------------------------------------------------------------ calling

    def plugin(self, name: str) -> object:
        """The registered plugin object named ``name``."""
        obj = self.pm.get_plugin(name)
        if obj is None:
            raise PluginError(f"plugin {name!r} is not loaded")
        return obj

    def hook(self, name: str) -> pluggy.HookCaller | None:
        """The caller of hook ``name``, or ``None`` when no loaded plugin declares it.

        The way to call a hook another plugin declares: ``pm.hook`` has no attribute for a hook
        nobody declared or implemented, and a caller without a specification (only
        ``optionalhook`` implementations) has no ``firstresult`` rule. So::

            hook = plugins.hook("clusterpulse_agent_connection")
            agent = hook(cluster=name) if hook is not None else None  # no ingester: pull

        and the caller says clearly what it does without the declaring plugin.
        """
        caller = getattr(self.pm.hook, name, None)
        if not isinstance(caller, pluggy.HookCaller) or not caller.has_spec():
            return None
        return caller

    def hookspec_table(self) -> list[HookSpecRow]:
        """Every declared hook: who declares it (``core`` or a plugin) and how it is called, by phase.

        Generated from the specifications (their ``called`` mark and pluggy options), for the
        hookspec table of ``docs/plugins.md``; the core's hooks first, in their module's order.
        """
        core_order = [name for name in vars(hookspecs) if name in HOOK_NAMES]
        rows = []
        for name in sorted(
            self._specified(),
            key=lambda n: (
                self.declared_by.get(n) != CORE,
                self.declared_by.get(n, ""),
                core_order.index(n) if n in core_order else 0,
                n,
            ),
        ):
            caller = getattr(self.pm.hook, name)
            assert caller.spec is not None
            how = getattr(caller.spec.function, hookspecs.CALLED_ATTRIBUTE, None)
            if how is None:
                how = "first result" if caller.spec.opts.get("firstresult") else "all results"
            rows.append(HookSpecRow(name, self.declared_by.get(name, "?"), str(how)))
        return rows

    def call_each(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call ``hook`` once per plugin implementing it, in load order: ``[(plugin, result)]``."""
        caller = getattr(self.pm.hook, hook)
        implementers = {impl.plugin_name for impl in caller.get_hookimpls()}
        results = []
        for name in self.order:
            if name not in implementers:
                continue
            others = [self.pm.get_plugin(n) for n in self.order if n != name]
            subset = self.pm.subset_hook_caller(hook, remove_plugins=others)
            try:
                result = subset(**kwargs)
            except Exception as exc:
                raise PluginError(f"plugin {name!r} failed in {hook}: {type(exc).__name__}: {exc}") from exc
            results.append(
                (
                    name,
                    result[0]
                    if isinstance(result, list) and result
                    else (None if isinstance(result, list) else result),
                )
            )
        return results

    def call_owner(self, hook: str, owner: str, **kwargs: Any) -> Any:
        """Call ``hook`` on plugin ``owner`` only, returning its result (exceptions propagate)."""
        others = [self.pm.get_plugin(n) for n in self.order if n != owner]
        return self.pm.subset_hook_caller(hook, remove_plugins=others)(**kwargs)

    def hooks_of(self, name: str) -> list[str]:
        """The hook names plugin ``name`` implements."""
        obj = self.pm.get_plugin(name)
        callers = self.pm.get_hookcallers(obj) or [] if obj is not None else []
        return sorted(c.name for c in callers)

    # ------------------------------------------------------------------ what plugins declare

    def settings_classes(self) -> dict[str, type | None]:
        """Plugin name -> its settings class (``None`` when it declares none)."""
        declared = dict(self.call_each("clusterpulse_settings_class"))
        return {name: declared.get(name) for name in self.order}

    def configure(self, config: Config) -> None:
        """Hand each plugin its validated settings."""
        for name in self.order:
            self.configure_one(config, name)

    def configure_one(self, config: Config, name: str) -> None:
        """Hand plugin ``name`` its validated settings (if it implements ``clusterpulse_configure``).

        The kinds are declared again afterwards: a plugin builds its kinds' reconcilers from its
        settings, so a declaration read before configuration must not be the one that runs.
        """
        impls = {i.plugin_name for i in self.pm.hook.clusterpulse_configure.get_hookimpls()}
        if name in impls:
            self._kinds = None
            try:
                self.call_owner("clusterpulse_configure", name, config=config, settings=config.plugin(name))
            except Exception as exc:
                raise PluginError(f"plugin {name!r} rejected its configuration: {exc}") from exc

    @property
    def contributions(self) -> Contributions:
        """Every function/aggregation/field type/filter operator registered by the plugins.

        A plugin whose registration hook raises is a :class:`PluginError` naming it; a tolerant
        host marks that plugin broken instead (unregistered, listed in :attr:`failures`) and
        keeps the others' contributions.
        """
        while self._contributions is None:
            try:
                self._contributions = self._collect_contributions()
            except _RegistrationFailed as failed:
                if not self._tolerant:
                    raise PluginError(failed.message) from failed.__cause__
                self.drop(failed.plugin, failed.message)
        return self._contributions

    def stored_names(self, index: str) -> list[str] | None:
        """Every storage backend's names in ``index`` (``clusterpulse_stored_names``), sorted and
        unique; None when no backend keeps that index."""
        answers = [answer for answer in self.pm.hook.clusterpulse_stored_names(index=index) if answer is not None]
        if not answers:
            return None
        return sorted({str(name) for answer in answers for name in answer})

    def drop(self, name: str, reason: str) -> None:
        """Unregister plugin ``name`` and record it as broken (a tolerant host's diagnosis)."""
        self.failures[name] = reason
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
        if name in self.order:
            self.order.remove(name)
        self._kinds = None

    def registry_hooks(self) -> dict[str, str]:
        """Registry hook name -> the contribution table it fills, for every declared registry hook."""
        found = {}
        for name in sorted(self._specified()):
            caller = getattr(self.pm.hook, name)
            table = getattr(caller.spec.function, hookspecs.REGISTRY_ATTRIBUTE, None) if caller.spec else None
            if table is not None:
                found[name] = str(table)
        return found

    def _collect_contributions(self) -> Contributions:
        contributions = Contributions()
        for hook, kind in self.registry_hooks().items():
            table = contributions.table(kind)
            caller = getattr(self.pm.hook, hook)
            implementers = {impl.plugin_name for impl in caller.get_hookimpls()}
            for name in self.order:
                if name not in implementers:
                    continue

                def register(item: str, impl: Any, /, _plugin: str = name, _table: Any = table, **meta: Any) -> None:
                    _table.add(Contribution(item, impl, _plugin, meta))

                try:
                    self.call_owner(hook, name, register=register)
                except DuplicateContributionError as exc:
                    raise PluginError(str(exc)) from exc
                except Exception as exc:
                    raise _RegistrationFailed(
                        name, f"plugin {name!r} failed in {hook}: {type(exc).__name__}: {exc}"
                    ) from exc
        return contributions

    @property
    def kinds(self) -> dict[str, tuple[str, ResourceKind]]:
        """Kind name -> (owning plugin, declaration); a kind declared twice is an error."""
        if self._kinds is None:
            kinds: dict[str, tuple[str, ResourceKind]] = {}
            for plugin, declared in self.call_each("clusterpulse_resource_kinds"):
                for kind in declared or ():
                    if kind.kind in kinds:
                        raise PluginError(
                            f"kind {kind.kind!r} is declared by both plugin {kinds[kind.kind][0]!r} "
                            f"and plugin {plugin!r}"
                        )
                    kinds[kind.kind] = (plugin, kind)
            self._kinds = kinds
        return self._kinds

    def reconcile_call(self, kind: ResourceKind, ref: ObjectRef, action: str, ctx: Any, call: Callable[[], Any]) -> Any:
        """``call()``, the kind's reconciler reconciling or forgetting (``action``) ``ref``, made
        through ``clusterpulse_reconcile_call`` so that the wrappers run around it."""
        return self.pm.hook.clusterpulse_reconcile_call(kind=kind, ref=ref, action=action, ctx=ctx, call=call)

    def reconciler(self, kind: str) -> Reconciler:
        """The object reconciling kind ``kind``: the one its declaration carries, else its owner's
        reconcile hooks (:class:`HookReconciler`)."""
        owner, declared = self.kinds[kind]
        if declared.reconciler is not None:
            return declared.reconciler
        return HookReconciler(self, owner, declared)

    def storage_backends(self) -> list[StorageBackend]:
        """Every backend from every plugin, in load order."""
        return [b for result in self.pm.hook.clusterpulse_storage_backends() for b in (result or ())]

    def collectors(self, where: str = "hub") -> list[Collector]:
        """Every collector from every plugin (``where``: ``hub`` or ``agent``); names must be unique."""
        seen: dict[str, Collector] = {}
        for result in self.pm.hook.clusterpulse_collectors(where=where):
            for collector in result or ():
                if collector.name in seen:
                    raise PluginError(f"collector {collector.name!r} is registered twice")
                seen[collector.name] = collector
        return list(seen.values())
