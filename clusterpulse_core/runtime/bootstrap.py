"""Building a :class:`Runtime` from configuration, and the one-shot reconcile (``run --once``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from prometheus_client import CollectorRegistry

from clusterpulse_core.config import (
    Config,
    ConfigError,
    CoreSettings,
    did_you_mean,
    finish_config,
    read_config,
    settings_warnings,
)
from clusterpulse_core.context import Runtime
from clusterpulse_core.fence import Fence
from clusterpulse_core.kinds import ObjectRef, ReconcileResult, ResourceKind
from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError
from clusterpulse_core.kube.credentials import CredentialsPolicy, SecretCache
from clusterpulse_core.kube.events import EventRecorder
from clusterpulse_core.kube.hub import hub_client
from clusterpulse_core.kube.pool import ClientPool
from clusterpulse_core.logs import TracebackOnce
from clusterpulse_core.plugins import PluginError, PluginHost, PluginPlan, plan_plugins
from clusterpulse_core.store import Store

log = logging.getLogger(__name__)


def load(
    config_file: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_plugins: Mapping[str, object] | None = None,
    flags: Mapping[str, tuple[str, Any]] | None = None,
) -> tuple[Config, PluginHost]:
    """Read the config, load the enabled plugins, validate their sections, configure them.

    The one validation: exactly what :func:`diagnose` (``config check``) checks; any problem
    raises :class:`ConfigError` listing them all, one per line. ``flags``: core settings given
    on the command line (see :func:`clusterpulse_core.config.build_settings`).
    """
    found = diagnose(config_file, env, extra_plugins, flags)
    if found.problems or found.config is None:
        raise ConfigError(*found.problems)
    for warning in found.warnings:
        log.warning("%s", warning)
    return found.config, found.host


def kind_workers(configured: Mapping[str, int], kinds: Sequence[ResourceKind]) -> dict[str, int]:
    """Workers per kind: the ``workers`` setting, else the count the kind declares.

    Raises :class:`ConfigError` (every problem) for a kind nobody declares or a count below 1.
    """
    declared = {kind.kind: kind.workers for kind in kinds}
    errors = []
    for name, count in configured.items():
        if name not in declared:
            errors.append(
                f"clusterpulse.workers.{name}: no enabled plugin declares this kind "
                f"({did_you_mean(name, declared)}kinds: {', '.join(sorted(declared)) or 'none'})"
            )
        elif count < 1:
            errors.append(f"clusterpulse.workers.{name}: expected a value >= 1, got {count!r}")
    if errors:
        raise ConfigError(*errors)
    return {name: configured.get(name, count) for name, count in declared.items()}


@attrs.frozen
class Diagnosis:
    """What a tolerant load found: every plugin that loaded, and every problem, one per line."""

    host: PluginHost
    plan: PluginPlan
    config: Config | None
    problems: tuple[str, ...]
    source: str = ""
    #: What plugins forgot but load without (``@hookimpl``, ``clusterpulse_api_version``), and the
    #: insecure choices of the settings (``settings_warnings``).
    warnings: tuple[str, ...] = ()


def diagnose(
    config_file: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_plugins: Mapping[str, object] | None = None,
    flags: Mapping[str, tuple[str, Any]] | None = None,
) -> Diagnosis:
    """Load as much as possible and collect every problem instead of stopping at the first.

    Used by the command line: plugin commands stay available when another plugin is broken,
    ``clusterpulse plugins`` shows the broken ones, and ``config check`` reports every error
    that ``run`` would meet (config keys and values, plugin imports and registration,
    plugin settings checks, duplicate names and kinds).
    """
    from clusterpulse_core.config import RawConfig, config_path

    env = os.environ if env is None else env
    problems: list[str] = []
    path = config_path(config_file, env)
    try:
        raw = read_config(path, env, problems, flags)
    except ConfigError as exc:  # the file cannot be read or parsed at all
        problems += exc.errors
        raw = RawConfig(CoreSettings(), {}, str(path or ""))
    plan = plan_plugins(raw.core.plugins, env)
    try:
        host = PluginHost(plan.names, extra=extra_plugins, tolerant=True)
    except PluginError as exc:  # a list naming a plugin twice
        problems.append(str(exc))
        host = PluginHost((), extra=extra_plugins, tolerant=True)
    problems += host.failures.values()
    raw = attrs.evolve(
        raw,
        core=attrs.evolve(raw.core, plugins=tuple(host.order)),
        plugin_sections={k: v for k, v in raw.plugin_sections.items() if k not in host.failures},
    )
    config: Config | None = None
    try:
        config = finish_config(raw, host.settings_classes(), env)
    except ConfigError as exc:
        problems += exc.errors
    except PluginError as exc:
        problems.append(str(exc))
    if config is not None:
        configured = True
        for name in host.order:
            try:
                host.configure_one(config, name)
            except PluginError as exc:
                problems.append(str(exc))
                configured = False
        if configured:
            problems += cross_plugin_problems(config, host)
    for check in (lambda: host.contributions, lambda: host.kinds):
        try:
            check()
        except PluginError as exc:
            problems.append(str(exc))
    problems += [failure for failure in host.failures.values() if failure not in problems]  # dropped meanwhile
    if not any(problem.startswith("clusterpulse.workers") for problem in problems):
        try:
            kind_workers(raw.core.workers, [kind for _owner, kind in host.kinds.values()])
        except ConfigError as exc:
            problems += exc.errors
        except PluginError:
            pass  # kinds declared twice: reported above
    warnings = list(host.warnings)
    if config is not None:
        warnings += settings_warnings(config)
    return Diagnosis(host, plan, config, tuple(problems), raw.source, tuple(warnings))


def cross_plugin_problems(config: Config, host: PluginHost) -> list[str]:
    """What ``clusterpulse_check_config`` finds, every plugin's lines (a plugin that raises: one line naming it)."""
    try:
        answers = host.call_each("clusterpulse_check_config", config=config, plugins=host)
    except PluginError as exc:
        return [str(exc)]
    return [str(line) for _name, lines in answers for line in lines or ()]


def build_runtime(
    config: Config, host: PluginHost, hub: KubeClient | None = None, metrics: CollectorRegistry | None = None
) -> Runtime:
    """Assemble the runtime: hub client, store fan-out over every backend, client pool."""
    registry = metrics or CollectorRegistry()
    hub = hub or hub_client(
        config.core.kubeconfig, timeout=config.core.request_timeout, max_bytes=config.core.max_response_bytes
    )
    fence = Fence()
    fence.register_metrics(registry)
    store = Store(host.storage_backends(), registry=registry, fence=fence)
    pool = ClientPool(
        max_idle=config.core.client_max_idle,
        timeout=config.core.request_timeout,
        max_bytes=config.core.max_response_bytes,
        max_in_flight=config.core.cluster_max_in_flight,
    )
    policy = CredentialsPolicy(config.core.endpoint_allow_list, config.core.require_secret_label)
    return Runtime(
        config=config,
        plugins=host,
        hub=hub,
        store=store,
        pool=pool,
        metrics=registry,
        fence=fence,
        events=EventRecorder(hub, fence, min_interval=config.core.event_interval),
        secrets=SecretCache(policy),
    )


def start_plugins(runtime: Runtime) -> None:
    """Call ``clusterpulse_start`` on every plugin in load order.

    A failure stops the plugins already started (and closes the store and pool), then
    raises :class:`PluginError` naming the plugin that failed.
    """
    started: list[str] = []
    for name in runtime.plugins.order:
        try:
            runtime.plugins.call_owner("clusterpulse_start", name, runtime=runtime)
        except Exception as exc:
            _stop(runtime, reversed(started))
            raise PluginError(f"plugin {name!r} failed to start: {type(exc).__name__}: {exc}") from exc
        started.append(name)


def stop_plugins(runtime: Runtime) -> None:
    """Call ``clusterpulse_stop`` on every plugin (reverse order), then close the store and the pool."""
    _stop(runtime, reversed(runtime.plugins.order))


def _stop(runtime: Runtime, names: Iterable[str]) -> None:
    for name in names:
        try:
            runtime.plugins.call_owner("clusterpulse_stop", name, runtime=runtime)
        except Exception:
            log.exception("plugin %s failed to stop", name)
    runtime.store.close()
    runtime.pool.close()


@attrs.frozen
class Outcome:
    """The result of reconciling one object."""

    ref: ObjectRef
    ok: bool
    detail: str = ""
    requeue_after: float | None = None


_TRACEBACKS = TracebackOnce()


class HubError(Exception):
    """The hub cannot serve a kind: its API is unreachable or refuses, or the kind's CRD is missing."""


def object_ref(kind: ResourceKind, obj: Mapping[str, Any]) -> ObjectRef:
    """The reference of a raw object."""
    meta = obj.get("metadata") or {}
    return ObjectRef(kind.kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def list_objects(runtime: Runtime, kind: ResourceKind) -> list[dict[str, Any]]:
    """Every object of ``kind`` in the watch namespace (all namespaces if cluster-scoped).

    Raises :class:`HubError` when the hub cannot be reached or does not serve the kind.
    """
    namespace = runtime.namespace if kind.namespaced else None
    try:
        return list(runtime.hub.list_items(kind.api_path(namespace)))
    except NotFoundError as exc:
        raise HubError(kind.not_served) from exc
    except KubeApiError as exc:
        if exc.status == 0:
            raise HubError(f"cannot reach the hub API at {runtime.hub.host}: {exc}") from exc
        raise HubError(f"listing {kind.kind} on the hub failed (HTTP {exc.status}): {exc}") from exc


def reconcile_object(runtime: Runtime, owner: str, kind: ResourceKind, obj: Mapping[str, Any]) -> Outcome:
    """Reconcile one object with its kind's reconciler; exceptions become a failed outcome."""
    ref = object_ref(kind, obj)
    ctx = runtime.context(kind, ref)
    try:
        reconciler = runtime.plugins.reconciler(kind.kind)
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            forgotten = runtime.plugins.reconcile_call(kind, ref, "forget", ctx, lambda: reconciler.forget(ref, ctx))
            if isinstance(forgotten, ReconcileResult):
                return Outcome(ref, not forgotten.error, forgotten.error or "deleting", forgotten.requeue_after)
            return Outcome(ref, True, "deleted")
        current = kind.with_defaults(obj)
        result = runtime.plugins.reconcile_call(kind, ref, "reconcile", ctx, lambda: reconciler.reconcile(current, ctx))
    except Exception as exc:
        ctx.log.error("reconcile failed (%s: %s)", type(exc).__name__, exc, exc_info=_TRACEBACKS.exc_info(exc))
        return Outcome(ref, False, f"{type(exc).__name__}: {exc}")
    if not isinstance(result, ReconcileResult):
        return Outcome(ref, True)
    return Outcome(ref, not result.error, result.error, result.requeue_after)


def reconcile_once(runtime: Runtime) -> list[Outcome]:
    """Reconcile every object of every enabled kind once (``clusterpulse run --once``)."""
    outcomes = []
    for owner, kind in runtime.plugins.kinds.values():
        for obj in list_objects(runtime, kind):
            outcomes.append(reconcile_object(runtime, owner, kind, obj))
    return outcomes
