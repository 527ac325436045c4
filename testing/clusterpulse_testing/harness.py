"""An in-process ClusterPulse for tests: the real manager with chosen plugins against emulators.

:func:`running_manager` (and the ``clusterpulse_manager`` pytest fixture built on it) writes a
config file, loads the plugins by name through the real loader (their entry points, their
settings validation), starts the real :class:`~clusterpulse_core.runtime.manager.Manager` on a
hub emulator, waits for its informers to sync, and records every piece stored beside the real
backends. A plugin's test needs no internal import::

    def test_my_kind(kube_api, redis_url, clusterpulse_manager):
        hub = kube_api(objects=[...])
        hub.add_crd("example.com", "v1", "Widget", "widgets")
        harness = clusterpulse_manager(["redis", "widget"], hub, redis_url=redis_url)
        hub.create({...})
        eventually(lambda: harness.stored(RecordPiece), "the record", timeout=harness.timeout)
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.pieces import Piece
from clusterpulse_testing.recording import BackendPlugin, RecordingBackend

P = TypeVar("P", bound=Piece)


@attrs.define
class Harness:
    """A started manager, its hub emulator and the pieces it stored (see :func:`running_manager`)."""

    #: The running :class:`~clusterpulse_core.runtime.manager.Manager`.
    manager: Any
    #: The hub emulator (:class:`~clusterpulse_testing.kube_api.KubeAPI`) it watches.
    hub: Any
    #: Every piece stored, in order, beside the configured backends.
    recording: RecordingBackend
    #: The config file it was started from.
    config_file: Path

    @property
    def runtime(self) -> Runtime:
        """The manager's runtime (config, plugins, client pool)."""
        runtime: Runtime = self.manager.runtime
        return runtime

    @property
    def timeout(self) -> float:
        """A bound for one reconcile and its writes: the hub ``request_timeout`` of the config."""
        return float(self.runtime.config.core.request_timeout)

    def stored(self, piece_type: type[P]) -> list[P]:
        """The pieces of ``piece_type`` stored so far, oldest first."""
        return self.recording.of(piece_type)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r} to a config file")


def write_config(
    path: Path,
    plugins: Sequence[str],
    sections: Mapping[str, Mapping[str, Any]] | None = None,
    core: Mapping[str, Any] | None = None,
) -> Path:
    """A ``clusterpulse.toml`` with ``[clusterpulse]`` (no probe servers unless ``core`` says so) and one
    ``[plugins.<name>]`` table per entry of ``sections``; returns ``path``."""
    values = {
        "plugins": list(plugins),
        "namespace": "clusterpulse",
        "metrics_bind_address": "0",
        "health_probe_bind_address": "0",
        **(core or {}),
    }
    lines = ["[clusterpulse]", *(f"{k} = {_toml_value(v)}" for k, v in values.items())]
    for name, section in (sections or {}).items():
        lines += ["", f"[plugins.{name}]", *(f"{k} = {_toml_value(v)}" for k, v in section.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def running_manager(
    plugins: Sequence[str],
    hub: Any,
    *,
    redis_url: str | None = None,
    sections: Mapping[str, Mapping[str, Any]] | None = None,
    core: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    backends: Sequence[Any] = (),
    extra_plugins: Mapping[str, object] | None = None,
    directory: Path | None = None,
) -> Iterator[Harness]:
    """The real manager with ``plugins`` (loaded by name, in that order) watching ``hub``; stopped on exit.

    ``redis_url`` fills ``[plugins.redis] url`` when ``redis`` is enabled; ``sections`` and ``core``
    add settings (``core={"namespace": ...}``); ``env`` replaces the process environment for the
    upstream variables (default: none). ``backends`` are more storage backends beside the recording
    one; ``extra_plugins`` are plugin objects loaded beside the named ones (a plugin under test
    defined in the test module). Raises :class:`~clusterpulse_core.config.ConfigError` for a bad
    config, as ``run`` does, and ``TimeoutError`` when the informers do not sync within
    ``request_timeout``.
    """
    from clusterpulse_core.runtime.bootstrap import build_runtime, load
    from clusterpulse_core.runtime.manager import Manager

    all_sections = {name: dict(values) for name, values in (sections or {}).items()}
    if redis_url is not None and "redis" in plugins:
        all_sections.setdefault("redis", {}).setdefault("url", redis_url)
    with contextlib.ExitStack() as stack:
        where = directory or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="clusterpulse-test-")))
        config_file = write_config(where / "clusterpulse.toml", plugins, all_sections, core)
        recording = RecordingBackend()
        config, host = load(
            str(config_file),
            env=dict(env or {}),
            extra_plugins={**(extra_plugins or {}), "recording": BackendPlugin(recording, *backends)},
        )
        runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
        manager = Manager(runtime)
        manager.start()
        try:
            if not manager.wait_synced(config.core.request_timeout):
                raise TimeoutError(f"the manager's informers did not sync within {config.core.request_timeout} s")
            yield Harness(manager, hub, recording, config_file)
        finally:
            manager.stop()
