"""The one config loader: a TOML file plus the upstream environment variables.

File layout::

    [clusterpulse]              # CoreSettings
    plugins = ["redis", "cluster"]
    namespace = "clusterpulse"

    [plugins.redis]             # the settings class the plugin declares
    host = "localhost"

Every section is validated into an attrs class. Errors name the full key path, the value
and what was expected (``plugins.redis.port: expected int, got 'abc'``). Environment
variables named in a field's metadata (``NAMESPACE``, ``REDIS_HOST``...) override the file
with the upstream parsing rules (:mod:`clusterpulse_core.envvars`).
"""

from __future__ import annotations

import difflib
import math
import os
import tomllib
import types
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin
from urllib.parse import urlsplit, urlunsplit

import attrs

from clusterpulse_core import envvars

DEFAULT_CONFIG_FILE = "clusterpulse.toml"
CONFIG_ENV = "CLUSTERPULSE_CONFIG"
SECRET_MASK = "********"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` for the closest of ``known`` to a misspelled ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in known}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
        close = [lowered[c] for c in close]
    return f"did you mean {close[0]!r}? " if close else ""


class ConfigError(Exception):
    """A configuration problem; the message names the key path and what was expected.

    ``errors`` lists every problem found (one per line in the message), so one run of
    ``config check`` reports them all.
    """

    def __init__(self, *errors: str) -> None:
        self.errors = [line for error in errors for line in str(error).splitlines()] or ["invalid configuration"]
        super().__init__("\n".join(self.errors))

    @classmethod
    def joined(cls, errors: list[ConfigError]) -> ConfigError:
        """One error carrying the messages of several."""
        return cls(*(line for error in errors for line in error.errors))


def setting(
    default: Any = attrs.NOTHING,
    *,
    env: str | None = None,
    minimum: float | None = None,
    above: float | None = None,
    secret: bool = False,
    help: str = "",
    factory: Any = None,
    choices: tuple[str, ...] | None = None,
    check: Any = None,
) -> Any:
    """An attrs field for a settings class, with its env var, range, secrecy and help text.

    ``minimum`` is the smallest allowed value, ``above`` a bound the value must exceed
    (``above=0``: strictly positive). ``choices`` restricts a string to these values (any case)
    when it comes from the file; ``check(value)`` raises ``ValueError`` for a value that is well
    typed but unusable (an address or URL that does not parse). All are reported by ``config
    check`` and by ``run`` (one validation) with the key path. A settings class may also define
    ``settings_problems(self)`` yielding ``"key: message"`` for rules between several fields.
    """
    metadata = {
        "env": env,
        "min": minimum,
        "above": above,
        "secret": secret,
        "help": help,
        "choices": choices,
        "check": check,
    }
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


def _bind_address(value: str) -> None:
    from clusterpulse_core.runtime.probes import parse_bind_address

    parse_bind_address(value)


def _allow_list(entries: tuple[str, ...]) -> None:
    from clusterpulse_core.kube.credentials import check_allow_entry

    for entry in entries:
        check_allow_entry(entry)


LOG_LEVELS = ("debug", "trace", "info", "warn", "warning", "error")


@attrs.frozen
class CoreSettings:
    """``[clusterpulse]``: the manager's own settings."""

    plugins: tuple[str, ...] | None = setting(
        None, help="enabled plugins, in load order; unset = the project's plugins that are installed"
    )
    namespace: str = setting("clusterpulse", env="NAMESPACE", help="watch namespace")
    log_level: str = setting("info", env="LOG_LEVEL", help="debug, info, warn, error", choices=LOG_LEVELS)
    kubeconfig: str = setting("", env="KUBECONFIG", help="hub kubeconfig; empty = in-cluster or ~/.kube/config")
    leader_elect: bool = setting(False, help="run leader election (Lease cluster-controller.clusterpulse.io)")
    lease_duration: float = setting(15.0, above=0, help="leader lease duration, seconds")
    renew_deadline: float = setting(10.0, above=0, help="leader renew deadline, seconds")
    retry_period: float = setting(2.0, above=0, help="leader election retry period, seconds")
    sharding: bool = setting(
        False,
        help="split sharded kinds between replicas by member Leases "
        "(clusterpulse-shard-<identity>); other kinds run on the leader",
    )
    shard_handover_delay: float = setting(
        30.0,
        minimum=0,
        help="an object taken over from another replica is first reconciled this long after it "
        "was let go (the interval)",
    )
    shard_dead_after: float = setting(
        0.0, minimum=0, help="delete a member Lease nobody renewed for this long, seconds (0: ten lease durations)"
    )
    metrics_bind_address: str = setting(":8080", help="/metrics listen address; '0' disables", check=_bind_address)
    health_probe_bind_address: str = setting(
        ":8081", help="/healthz and /readyz listen address; '0' disables", check=_bind_address
    )
    probe_request_timeout: float = setting(
        10.0,
        above=0,
        help="the /metrics and probe servers close a connection whose request is not answered "
        "within this many seconds (slow clients included)",
    )
    probe_max_connections: int = setting(
        16, minimum=1, help="connections the /metrics and probe servers serve at once (each); more are answered 503"
    )
    resync_period: float = setting(300.0, above=0, help="informer full relist period, seconds")
    watch_timeout: int = setting(300, minimum=1, help="server-side watch timeoutSeconds")
    watch_silence_limit: float = setting(600.0, above=0, help="restart a watch that delivered nothing for this long")
    queue_base_delay: float = setting(0.005, minimum=0, help="per-item retry backoff start, seconds")
    queue_max_delay: float = setting(1000.0, minimum=0, help="per-item retry backoff cap, seconds")
    queue_qps: float = setting(10.0, above=0, help="work queue token bucket rate")
    queue_burst: int = setting(100, minimum=1, help="work queue token bucket size")
    shutdown_grace: float = setting(30.0, minimum=0, help="seconds to let in-flight reconciles finish on SIGTERM")
    ghost_sweep_interval: float = setting(
        3600.0,
        minimum=0,
        help="seconds between two sweeps for stored objects the hub no longer has (one at start; 0 = at start only)",
    )
    request_timeout: float = setting(
        30.0, above=0, help="wall-clock limit of every Kubernetes API call (connect, headers and body), seconds"
    )
    max_response_bytes: int = setting(
        64 * 1024 * 1024, minimum=1024, help="largest accepted Kubernetes API response (one list page), bytes"
    )
    reconcile_timeout: float = setting(
        120.0, above=0, help="wall-clock deadline of one reconcile (a kind may set a shorter one), seconds"
    )
    event_interval: float = setting(
        300.0, minimum=0, help="the same Kubernetes Event (object and reason) is recorded at most this often, seconds"
    )
    cluster_max_in_flight: int = setting(
        2, minimum=1, help="reconciles that may use one managed cluster at the same time"
    )
    client_max_idle: float = setting(1800.0, above=0, help="close managed-cluster clients unused this long, seconds")
    endpoint_allow_list: tuple[str, ...] = setting(
        (),
        check=lambda entries: _allow_list(entries),
        help="hosts (exact or *.domain), IP addresses or CIDRs that ClusterConnection and RegistryConnection "
        "endpoints may name; empty = any (docs/security.md#who-may-point-the-hub-where)",
    )
    require_secret_label: bool = setting(
        False, help='use a credentials Secret only when it carries the label clusterpulse.io/credentials: "true"'
    )
    workers: dict[str, int] = setting(  # noqa: RUF009 (a fresh dict per instance; never mutated)
        factory=dict,
        help="reconcile workers per kind, e.g. {ClusterConnection = 16}; "
        "a kind not listed uses the count its plugin declares",
    )

    def settings_problems(self) -> Iterator[str]:
        """The rules between fields (leader election's, as controller-runtime checks them; the backoff's)."""
        if self.leader_elect or self.sharding:
            if self.renew_deadline >= self.lease_duration:
                yield (
                    f"renew_deadline: must be less than lease_duration ({self.lease_duration:g}), "
                    f"got {self.renew_deadline:g}"
                )
            if self.retry_period >= self.renew_deadline:
                yield (
                    f"retry_period: must be less than renew_deadline ({self.renew_deadline:g}), "
                    f"got {self.retry_period:g}"
                )
        if self.queue_base_delay > self.queue_max_delay:
            yield (
                f"queue_base_delay: must not exceed queue_max_delay ({self.queue_max_delay:g}), "
                f"got {self.queue_base_delay:g}"
            )


@attrs.frozen
class Config:
    """The validated configuration: core settings plus each enabled plugin's settings."""

    core: CoreSettings = CoreSettings()
    plugins: Mapping[str, Any] = attrs.field(factory=dict)
    source: str = ""

    def plugin(self, name: str) -> Any:
        """The validated settings object of plugin ``name`` (``None`` if it declares none)."""
        return self.plugins.get(name)


@attrs.frozen
class RawConfig:
    """A parsed but not yet validated config file: what discovery needs before plugins load."""

    core: CoreSettings
    plugin_sections: Mapping[str, Mapping[str, Any]]
    source: str


def config_path(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """``--config``, else ``$CLUSTERPULSE_CONFIG``, else ``./clusterpulse.toml`` if it exists."""
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.exists() else None


def read_config(
    path: Path | None,
    env: Mapping[str, str] | None = None,
    problems: list[str] | None = None,
    flags: Mapping[str, tuple[str, Any]] | None = None,
) -> RawConfig:
    """Parse the file (if any) and validate the core section; plugin sections stay raw.

    With ``problems`` (a list), errors are appended to it and the best-effort result (bad
    keys at their defaults) is returned, so a diagnosis can go on to the plugins.
    """
    env = os.environ if env is None else env
    data: dict[str, Any] = {}
    if path is not None:
        try:
            # "-" reads the file from standard input (read once, then kept for the second load).
            text = _stdin_text() if str(path) == "-" else path.read_text()
            data = tomllib.loads(text)
        except FileNotFoundError as exc:
            raise ConfigError(f"{path}: config file not found") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{'<stdin>' if str(path) == '-' else path}: not valid TOML: {exc}") from exc
    errors: list[ConfigError] = [
        ConfigError(f"{name}: unknown section (expected [clusterpulse] or [plugins.<name>])")
        for name in sorted(set(data) - {"clusterpulse", "plugins"})
    ]
    core = CoreSettings()
    try:
        core = build_settings(
            CoreSettings,
            _table(data.get("clusterpulse", {}), "clusterpulse"),
            "clusterpulse",
            env,
            lenient=problems is not None,
            flags=flags,
        )
    except ConfigError as exc:
        errors.append(exc)
        if isinstance(getattr(exc, "partial", None), CoreSettings):
            core = exc.partial  # type: ignore[attr-defined]
    sections: dict[str, Any] = {}
    try:
        sections = _table(data.get("plugins", {}), "plugins")
    except ConfigError as exc:
        errors.append(exc)
    for name, section in list(sections.items()):
        try:
            _table(section, f"plugins.{name}")
        except ConfigError as exc:
            errors.append(exc)
            sections[name] = {}
    if errors and problems is None:
        raise ConfigError.joined(errors)
    for error in errors:
        problems += error.errors  # type: ignore[operator]
    return RawConfig(core, sections, str(path) if path else "")


_STDIN_CACHE: list[str] = []


def _stdin_text() -> str:
    if not _STDIN_CACHE:
        import sys

        _STDIN_CACHE.append(sys.stdin.read())
    return _STDIN_CACHE[0]


def finish_config(
    raw: RawConfig, settings_classes: Mapping[str, type | None], env: Mapping[str, str] | None = None
) -> Config:
    """Validate each enabled plugin's section with the class it declared."""
    env = os.environ if env is None else env
    enabled = raw.core.plugins or ()
    errors: list[ConfigError] = []
    for name in raw.plugin_sections:
        if name not in enabled:
            errors.append(
                ConfigError(
                    f"plugins.{name}: section for a plugin that is not enabled "
                    f"(enabled: {', '.join(enabled) or 'none'})"
                )
            )
    plugins: dict[str, Any] = {}
    for name in enabled:
        if name not in settings_classes:
            continue  # not loaded: its load failure is reported on its own
        cls = settings_classes.get(name)
        section = raw.plugin_sections.get(name, {})
        if cls is None:
            if section:
                key = next(iter(section))
                errors.append(ConfigError(f"plugins.{name}.{key}: unknown key (plugin {name!r} has no settings)"))
            plugins[name] = None
            continue
        try:
            plugins[name] = build_settings(cls, section, f"plugins.{name}", env)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigError.joined(errors)
    return Config(core=raw.core, plugins=plugins, source=raw.source)


def build_settings(
    cls: type,
    data: Mapping[str, Any],
    path: str,
    env: Mapping[str, str],
    lenient: bool = False,
    flags: Mapping[str, tuple[str, Any]] | None = None,
) -> Any:
    """Validate ``data`` into ``cls``: known keys, right types, ranges; then env overrides, then flags.

    ``flags`` maps a field to ``(flag, value)`` given on the command line (``run
    --metrics-bind-address``): it wins over the file and the environment and is checked the
    same way, its errors naming the flag. Every problem is reported (one :class:`ConfigError`
    listing them all). ``lenient`` also attaches the settings built from the good keys as the
    error's ``partial``.
    """
    flags = flags or {}
    attrs.resolve_types(cls)
    fields = {f.name: f for f in attrs.fields(cls)}
    errors = [
        ConfigError(f"{path}.{key}: unknown key ({did_you_mean(key, fields)}expected one of: {', '.join(fields)})")
        for key in data
        if key not in fields
    ]
    values: dict[str, Any] = {}
    for name, field in fields.items():
        key_path = f"{path}.{name}"
        try:
            if name in data:
                values[name] = _check_value(data[name], field.type, key_path)
                choices = field.metadata.get("choices")
                if choices and isinstance(values[name], str) and values[name].strip().lower() not in choices:
                    raise ConfigError(f"{key_path}: expected one of {', '.join(choices)}, got {data[name]!r}")
            env_name = field.metadata.get("env")
            if env_name and env.get(env_name, "") != "":
                default = values.get(name, _default_of(field))
                values[name] = _from_env(env[env_name], field, default)
            if name in flags:
                key_path = f"{flags[name][0]} ({key_path})"
                values[name] = _check_value(flags[name][1], field.type, key_path)
            if name in values:
                _check_range(values[name], field, key_path)
            check = field.metadata.get("check")
            if check is not None and name in values:
                try:
                    check(values[name])
                except ValueError as exc:
                    raise ConfigError(f"{key_path}: {exc}") from exc
        except ConfigError as exc:
            errors.append(exc)
            values.pop(name, None)
    built = None
    try:
        built = cls(**values)
    except (TypeError, ValueError) as exc:
        errors.append(ConfigError(f"{path}: {exc}"))
    rules = getattr(built, "settings_problems", None)
    if rules is not None:  # also on the good keys when others are bad: every problem in one run
        errors += [ConfigError(f"{path}.{problem}") for problem in rules()]
    if errors:
        error = ConfigError.joined(errors)
        if lenient and built is not None:
            error.partial = built  # type: ignore[attr-defined]
        raise error
    return built


def _check_range(value: Any, field: attrs.Attribute[Any], key_path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if not math.isfinite(value):  # TOML has nan and inf: no bound below holds them, no timeout takes them
        raise ConfigError(f"{key_path}: expected a finite number, got {value!r}")
    minimum, above = field.metadata.get("min"), field.metadata.get("above")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key_path}: expected a value >= {minimum}, got {value!r}")
    if above is not None and value <= above:
        raise ConfigError(f"{key_path}: expected a value > {above}, got {value!r}")


def mask_url(text: str) -> str:
    """``text`` with the password of a URL's user info masked (``rediss://u:********@h``); other text as is."""
    if "://" not in text or "@" not in text:
        return text
    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:
        return text
    if not password:
        return text
    userinfo, _at, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{SECRET_MASK}@{hostinfo}"))


def _masked_value(value: Any) -> Any:
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, tuple | list):
        return [_masked_value(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _masked_value(item) for key, item in value.items()}
    return value


def masked(settings: Any) -> dict[str, Any]:
    """The settings as a plain dict with secret fields, and passwords inside URLs, masked (``config show``, logs)."""
    out: dict[str, Any] = {}
    for field in attrs.fields(type(settings)):
        value = getattr(settings, field.name)
        out[field.name] = SECRET_MASK if field.metadata.get("secret") and value else _masked_value(value)
    return out


def settings_warnings(config: Config) -> list[str]:
    """What each settings class says is insecure in ``config`` (``settings_warnings()``), with its key path.

    A settings class may define ``settings_warnings(self)`` yielding ``"key: message"`` for a choice
    that works but weakens security (an opt-out of verified TLS, a credential over plain TCP);
    ``config check`` prints them as warnings and ``run`` logs them.
    """
    sections: list[tuple[str, Any]] = [("clusterpulse", config.core)]
    sections += [(f"plugins.{name}", settings) for name, settings in config.plugins.items() if settings is not None]
    found: list[str] = []
    for path, settings in sections:
        rules = getattr(settings, "settings_warnings", None)
        if rules is not None:
            found += [f"{path}.{warning}" for warning in rules()]
    return found


def env_names(cls: type) -> list[tuple[str, str, Any]]:
    """(field, env var, default) for every field of ``cls`` that an env var overrides."""
    return [(f.name, f.metadata["env"], _default_of(f)) for f in attrs.fields(cls) if f.metadata.get("env")]


def _default_of(field: attrs.Attribute[Any]) -> Any:
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return default.factory()
    return default


def _from_env(raw: str, field: attrs.Attribute[Any], default: Any) -> Any:
    tp = _strip_optional(field.type)
    if tp is bool:
        return envvars.parse_bool(raw, default)
    if tp is int:
        return envvars.parse_int(raw, default, field.metadata.get("min"))
    if tp is float:
        return envvars.parse_float(raw, default)
    if get_origin(tp) in (tuple, list):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    return envvars.parse_str(raw, default)


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin in (tuple, list):
        return f"list of {_type_name(get_args(tp)[0])}"
    if origin is dict or tp is dict:
        return "table"
    return "none" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _check_value(value: Any, tp: Any, path: str) -> Any:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return None
        others = [arg for arg in get_args(tp) if arg is not type(None)]
        if len(others) == 1:  # Optional[X]: X's own, more precise message
            return _check_value(value, others[0], path)
        for arg in get_args(tp):
            if arg is type(None):
                continue
            try:
                return _check_value(value, arg, path)
            except ConfigError:
                continue
        raise ConfigError(f"{path}: expected {_type_name(tp)}, got {value!r}")
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected {_type_name(tp)}, got {value!r}")
        item = get_args(tp)[0]
        return tuple(_check_value(v, item, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a table, got {value!r}")
        args = get_args(tp)
        if args:
            return {k: _check_value(v, args[1], f"{path}.{k}") for k, v in value.items()}
        return dict(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected bool (true/false), got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected int, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{path}: expected number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected string, got {value!r}")
        return value
    return value


def _table(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: expected a table, got {value!r}")
    return value
