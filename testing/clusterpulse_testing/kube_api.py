"""A Kubernetes API emulator for tests: a real HTTP server the real ``kubernetes`` client talks to.

Usage::

    with KubeAPI() as api:
        api.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}])
        core = kubernetes.client.CoreV1Api(api.api_client())
        core.list_namespace()

The server runs on 127.0.0.1 in a background thread with its own asyncio loop. It keeps objects
in memory with real API-server semantics where tests depend on them: uid, creationTimestamp,
generation, one resourceVersion counter, conflicts, status subresources, pagination, label and
field selectors, resumable watches with 410 Gone, discovery including CRDs, and failure injection.

Built on kmock 0.8 (see :mod:`.kube_api_http`, the only module that imports it).
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import contextlib
import copy
import json
import pathlib
import signal
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import FrameType, TracebackType
from typing import Any, Self, TypeVar

import aiohttp.web
import kubernetes.client
import yaml

from .kube_api_http import (
    DEFAULT_VERSION,
    Backend,
    Controls,
    KubeAPIHandler,
    RequestRecord,
    WriteRecord,
    builtin_resource_types,
)
from .kube_api_store import CRD_GROUP, ObjectStore
from .kube_api_util import ApiError
from .tls import loopback_ca

__all__ = ["ApiError", "KubeAPI", "SeedError", "seed_checked", "serve"]

T = TypeVar("T")
Obj = dict[str, Any]

HOST = "127.0.0.1"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
CALL_TIMEOUT = 30.0
SHUTDOWN_GRACE = 1.0
OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
_SEED_ORDER = {"CustomResourceDefinition": 0, "Namespace": 1}


def _documents(path: pathlib.Path) -> list[Obj]:
    """The objects in one YAML/JSON file: multi-document YAML and ``kind: List`` are unpacked."""
    text = path.read_text(encoding="utf-8")
    docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
    objects: list[Obj] = []
    for doc in docs:
        if not doc:
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: expected an object, got {type(doc).__name__}")
        if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
            objects.extend(item for item in doc.get("items") or [] if item)
        else:
            objects.append(doc)
    return objects


def _version_info(overrides: Mapping[str, str]) -> dict[str, str]:
    """``/version``: the defaults, the overrides, and major/minor derived from a new gitVersion."""
    info = dict(DEFAULT_VERSION, **overrides)
    git_version = overrides.get("gitVersion")
    if git_version:
        major, _, rest = git_version.lstrip("v").partition(".")
        derived = {"major": major, "minor": rest.split(".", 1)[0]}
        info.update({key: value for key, value in derived.items() if key not in overrides})
    return info


class KubeAPI:
    """A Kubernetes API server emulator on 127.0.0.1, running in a background thread.

    ``port=0`` picks a free port; :meth:`restart` keeps it. ``require_token`` makes every request
    without ``Authorization: Bearer <token>`` fail with 401. ``version`` overrides fields of
    ``/version``. ``history_limit`` bounds the watch history (older versions get 410 Gone).
    ``first_resource_version`` (default: milliseconds since the epoch) is where the
    resourceVersion counter starts, so serving the same data again later never goes back.
    ``tls_cert``/``tls_key`` (PEM files) serve HTTPS instead of HTTP, as a real API server does;
    ``tls_ca`` is the CA file the client helpers (:meth:`api_client`, :meth:`kubeconfig`) trust.
    ``tls=True`` serves HTTPS with this process's loopback CA (:func:`~clusterpulse_testing.tls.loopback_ca`,
    whose PEM is :attr:`ca_pem`): what a managed cluster's credentials Secret puts in ``ca.crt``.

    The test helpers (:meth:`create`, :meth:`get`, ...) work whether or not the server runs; while it
    runs they execute on its loop thread, so they emit watch events exactly like HTTP writes.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        version: Mapping[str, str] | None = None,
        require_token: str | None = None,
        history_limit: int = 50_000,
        request_log_limit: int = 10_000,
        first_resource_version: int | None = None,
        tls_cert: str | pathlib.Path | None = None,
        tls_key: str | pathlib.Path | None = None,
        tls_ca: str | pathlib.Path | None = None,
        tls: bool = False,
    ) -> None:
        self._port = port
        if tls and tls_cert is None:
            certificates = loopback_ca()
            tls_cert, tls_key, tls_ca = certificates.cert_file, certificates.key_file, certificates.ca_file
        self._ssl: ssl.SSLContext | None = None
        if tls_cert is not None:
            self._ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._ssl.load_cert_chain(str(tls_cert), str(tls_key) if tls_key is not None else None)
        self._tls_ca = str(tls_ca) if tls_ca is not None else None
        if first_resource_version is None:
            # Milliseconds since the epoch: a later start of the same data never goes backwards.
            first_resource_version = int(time.time() * 1000)
        self._store = ObjectStore(
            builtin_resource_types(), history_limit=history_limit, first_resource_version=first_resource_version
        )
        self._controls = Controls(
            require_token=require_token, request_log_limit=request_log_limit, version=_version_info(version or {})
        )
        self._lifecycle = threading.RLock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._handler: KubeAPIHandler | None = None

    # --- lifecycle -----------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The listening port (the requested one until the first start with ``port=0``)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https://`` when serving TLS)."""
        return f"{'https' if self._ssl is not None else 'http'}://{HOST}:{self._port}"

    @property
    def ca_pem(self) -> str:
        """The PEM of the CA this server's certificate chains to (empty when it serves plain HTTP)."""
        return pathlib.Path(self._tls_ca).read_text() if self._tls_ca is not None and self._ssl is not None else ""

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def handler(self) -> KubeAPIHandler | None:
        """The kmock handler of the current run (for kmock DSL reactions); None when stopped."""
        return self._handler

    def start(self) -> Self:
        """Start serving (bind the port, start the thread); returns self."""
        with self._lifecycle:
            if self.running:
                raise RuntimeError("the Kubernetes API emulator is already running")
            ready = threading.Event()
            errors: list[BaseException] = []
            thread = threading.Thread(target=self._run, args=(ready, errors), name="kube-api", daemon=True)
            self._thread = thread
            thread.start()
            if not ready.wait(START_TIMEOUT) or errors:
                self.stop()
                raise errors[0] if errors else TimeoutError("the Kubernetes API emulator did not start in time")
            return self

    def stop(self) -> None:
        """Stop serving: end the watches, close the port, join the thread. Objects are kept."""
        with self._lifecycle:
            thread, loop, stop_event = self._thread, self._loop, self._stop_event
            if thread is None:
                return
            if loop is not None and stop_event is not None:
                with contextlib.suppress(RuntimeError):  # the loop may already be closed
                    loop.call_soon_threadsafe(stop_event.set)
            thread.join(STOP_TIMEOUT)
            if thread.is_alive():
                raise TimeoutError("the Kubernetes API emulator did not stop in time")
            self._thread = None

    def restart(self) -> Self:
        """Stop, then start again on the same port with the same objects (an outage)."""
        self.stop()
        return self.start()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _run(self, ready: threading.Event, errors: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(ready, errors))
        except BaseException as exc:  # reported to start() if it happens before ready
            if not ready.is_set():
                errors.append(exc)
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            self._loop = None
            self._stop_event = None
            self._handler = None
            loop.close()
            ready.set()

    async def _serve(self, ready: threading.Event, errors: list[BaseException]) -> None:
        self._stop_event = asyncio.Event()
        handler = KubeAPIHandler(backend=Backend(self._store, self._controls))
        async with handler:
            server = aiohttp.web.Server(handler, handler_cancellation=True)
            runner = aiohttp.web.ServerRunner(server, shutdown_timeout=SHUTDOWN_GRACE)
            await runner.setup()
            try:
                site = aiohttp.web.TCPSite(runner, HOST, self._port, reuse_address=True, ssl_context=self._ssl)
                await site.start()
                self._port = int(runner.addresses[0][1])
                self._handler = handler
                self._loop = asyncio.get_running_loop()
                ready.set()
                await self._stop_event.wait()
            finally:
                self._store.close_watchers()
                await runner.cleanup()

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the loop thread while serving (so watchers see it), else right here."""
        if threading.current_thread() is self._thread:  # already on the loop (e.g. a kmock reaction)
            return fn()
        with self._lifecycle:
            loop, thread = self._loop, self._thread
            if loop is None or thread is None:
                return fn()
            future: concurrent.futures.Future[T] = concurrent.futures.Future()

            def run() -> None:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn())
                    except BaseException as exc:
                        future.set_exception(exc)

            loop.call_soon_threadsafe(run)
            return future.result(CALL_TIMEOUT)

    # --- clients -------------------------------------------------------------------------------------

    def api_client(self, token: str | None = "test") -> kubernetes.client.ApiClient:
        """A ``kubernetes`` ApiClient for this server, sending ``Bearer <token>`` (None: no header)."""
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        if self._tls_ca is not None:
            configuration.ssl_ca_cert = self._tls_ca
        if token is not None:
            configuration.api_key = {"authorization": token}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    def kubeconfig(self, context_name: str = "emulator", token: str = "test") -> Obj:
        """A kubeconfig document pointing at this server."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": context_name,
                    "cluster": {
                        "server": self.url,
                        **({"certificate-authority": self._tls_ca} if self._tls_ca else {}),
                    },
                }
            ],
            "users": [{"name": context_name, "user": {"token": token}}],
            "contexts": [
                {
                    "name": context_name,
                    "context": {"cluster": context_name, "user": context_name, "namespace": "default"},
                }
            ],
            "current-context": context_name,
            "preferences": {},
        }

    def write_kubeconfig(
        self, path: str | pathlib.Path, context_name: str = "emulator", token: str = "test"
    ) -> pathlib.Path:
        """Write a kubeconfig for this server to ``path``; returns the path."""
        target = pathlib.Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        document = yaml.safe_dump(self.kubeconfig(context_name, token), sort_keys=False)
        target.write_text(document, encoding="utf-8")
        return target

    # --- test knobs ----------------------------------------------------------------------------------

    @property
    def requests(self) -> builtins.list[tuple[str, str, dict[str, str]]]:
        """The served requests as (method, path, query), oldest first (bounded)."""
        return self._controls.requests()

    @property
    def callers(self) -> builtins.list[RequestRecord]:
        """Every served request with the caller's User-Agent, oldest first (bounded; cleared with the log)."""
        return self._controls.callers()

    @property
    def writes(self) -> builtins.list[WriteRecord]:
        """Every write request (POST/PUT/PATCH/DELETE) with the writer's User-Agent, oldest first."""
        return self._controls.writes()

    def clear_requests(self) -> None:
        """Forget the request log."""
        self._controls.clear_log()

    def fail(self, path_regex: str, status: int = 500, times: int | None = None, method: str | None = None) -> None:
        """Fail requests whose path matches ``path_regex`` (re.search) with ``status`` and a Status body.

        ``times`` limits how many requests fail (None: until :meth:`clear_failures`); ``method``
        limits it to one HTTP method.
        """
        self._controls.add_failure(path_regex, status, times, method)

    def delay(self, path_regex: str, seconds: float) -> None:
        """Delay requests whose path matches ``path_regex`` by ``seconds`` (until cleared)."""
        self._controls.add_delay(path_regex, seconds)

    def clear_failures(self) -> None:
        """Remove every injected failure and delay."""
        self._controls.clear()

    def compact(self) -> int:
        """Forget the watch history, so any older resourceVersion gets 410 Gone; returns the current one."""
        return self._call(self._store.compact)

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion handed out by the server."""
        return str(self._store.resource_version)

    # --- resources and objects -----------------------------------------------------------------------

    def add_crd(
        self,
        group: str,
        version: str,
        kind: str,
        plural: str,
        namespaced: bool = True,
        status_subresource: bool = True,
        short_names: Iterable[str] = (),
        singular: str | None = None,
    ) -> Obj:
        """Register a custom resource by creating its CustomResourceDefinition (:func:`any_content_crd`);
        returns the CRD."""
        return self.create(
            any_content_crd(group, version, kind, plural, namespaced, status_subresource, short_names, singular)
        )

    def seed(self, objects: Iterable[Mapping[str, Any]]) -> builtins.list[Obj]:
        """Create many objects (CRDs first, then namespaces, then the rest, otherwise in order)."""
        ordered = sorted(objects, key=lambda obj: _SEED_ORDER.get(str(obj.get("kind")), 2))
        bodies = [copy.deepcopy(dict(obj)) for obj in ordered]
        created = self._call(lambda: [self._create(body) for body in bodies])  # one hop for all
        return copy.deepcopy(created)

    def load_dir(self, path: str | pathlib.Path) -> builtins.list[Obj]:
        """Seed every ``*.yaml``/``*.yml``/``*.json`` file under ``path`` (sorted, recursive)."""
        root = pathlib.Path(path)
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in OBJECT_SUFFIXES)
        objects: builtins.list[Obj] = []
        for file in files:
            objects.extend(_documents(file))
        return self.seed(objects)

    def create(self, obj: Mapping[str, Any], validate: bool = True) -> Obj:
        """Create an object (status kept as given; namespace defaults to ``default``).

        A custom resource is checked against its CRD's schema (422 Invalid, as a real API server);
        ``validate=False`` stores it anyway, as one stored under an earlier, looser CRD.
        """
        body = copy.deepcopy(dict(obj))
        return copy.deepcopy(self._call(lambda: self._create(body, validate)))

    def _create(self, body: Obj, validate: bool = True) -> Obj:
        resource_type = self._store.resolve(str(body.get("apiVersion", "")), str(body.get("kind", "")))
        return self._store.create(resource_type, body, validate=validate)

    def serves(self, api_version: str, kind_or_plural: str) -> bool:
        """Whether objects of this apiVersion and kind (or plural) can be created."""

        def run() -> bool:
            try:
                self._store.resolve(api_version, kind_or_plural)
            except ApiError:
                return False
            return True

        return self._call(run)

    def get(self, api_version: str, kind_or_plural: str, name: str, namespace: str | None = None) -> Obj | None:
        """The stored object, or None."""

        def run() -> Obj | None:
            resource_type = self._store.resolve(api_version, kind_or_plural)
            try:
                return self._store.get(resource_type, namespace, name)
            except ApiError as error:
                if error.code == 404:
                    return None
                raise

        return copy.deepcopy(self._call(run))

    def update(self, obj: Mapping[str, Any], validate: bool = True) -> Obj:
        """Replace an object, status included (a stale ``metadata.resourceVersion`` raises 409).

        ``validate=False``: as :meth:`create`.
        """
        body = copy.deepcopy(dict(obj))
        meta = body.get("metadata") or {}

        def run() -> Obj:
            resource_type = self._store.resolve(str(body.get("apiVersion", "")), str(body.get("kind", "")))
            namespace, name = meta.get("namespace"), str(meta.get("name", ""))
            updated = self._store.update(resource_type, namespace, name, body, validate=validate)
            if "status" in body and resource_type.status_subresource:
                updated = self._store.update(
                    resource_type, namespace, name, {"status": body["status"]}, subresource="status"
                )
            return updated

        return copy.deepcopy(self._call(run))

    def delete(self, api_version: str, plural_or_kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """Delete an object; returns its last state, or None if it did not exist."""

        def run() -> Obj | None:
            resource_type = self._store.resolve(api_version, plural_or_kind)
            try:
                return self._store.delete(resource_type, namespace, name)
            except ApiError as error:
                if error.code == 404:
                    return None
                raise

        return copy.deepcopy(self._call(run))

    def list(self, api_version: str, plural_or_kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Every stored object of a resource (in one namespace, or all), in key order."""

        def run() -> builtins.list[Obj]:
            resource_type = self._store.resolve(api_version, plural_or_kind)
            return self._store.list_page(resource_type, namespace).items

        return copy.deepcopy(self._call(run))


class SeedError(Exception):
    """Objects given to ``clusterpulse testing kube-api`` cannot be seeded; one line naming the file and fix."""


def _sourced_objects(objects: str) -> builtins.list[tuple[str, Obj]]:
    """(file name, object) for every object of the folder ``objects``, or of stdin for ``-``."""
    if objects == "-":
        import sys

        text = sys.stdin.read()
        try:
            docs = (
                [json.loads(text)] if text.lstrip().startswith(("{", "[")) else builtins.list(yaml.safe_load_all(text))
            )
        except (ValueError, yaml.YAMLError) as exc:
            raise SeedError(f"<stdin>: neither JSON nor YAML: {exc}") from exc
        found: builtins.list[tuple[str, Obj]] = []
        for doc in docs:
            if isinstance(doc, dict) and isinstance(doc.get("items"), builtins.list):
                found += [("<stdin>", item) for item in doc["items"] if item]
            elif doc:
                if not isinstance(doc, dict):
                    raise SeedError(f"<stdin>: expected an object, got {type(doc).__name__}")
                found.append(("<stdin>", doc))
        return found
    root = pathlib.Path(objects)
    if not root.is_dir():
        raise SeedError(f"{objects}: not a folder (give a folder of YAML/JSON files, or '-' for stdin)")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in OBJECT_SUFFIXES)
    sourced: builtins.list[tuple[str, Obj]] = []
    for file in files:
        try:
            sourced += [(str(file), obj) for obj in _documents(file)]
        except (ValueError, yaml.YAMLError) as exc:
            raise SeedError(f"{file}: cannot be read: {exc}".splitlines()[0]) from exc
    return sourced


def any_content_crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    status_subresource: bool = True,
    short_names: Iterable[str] = (),
    singular: str | None = None,
) -> Obj:
    """A CustomResourceDefinition serving ``kind`` with any content (no schema bounds), to seed an
    emulator with or create in it (:meth:`KubeAPI.add_crd`)."""
    version_spec: Obj = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if status_subresource:
        version_spec["subresources"] = {"status": {}}
    names: Obj = {"kind": kind, "plural": plural, "singular": singular or kind.lower(), "listKind": f"{kind}List"}
    if short_names:
        names["shortNames"] = builtins.list(short_names)
    return {
        "apiVersion": f"{CRD_GROUP}/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "versions": [version_spec],
            "scope": "Namespaced" if namespaced else "Cluster",
        },
    }


def seed_checked(api: KubeAPI, sourced: Iterable[tuple[str, Obj]], crds: Iterable[Mapping[str, Any]] = ()) -> int:
    """Create ``crds``, the CRDs among the objects, then the rest; a kind without a CRD is a :class:`SeedError`.

    Returns the number of objects created.
    """
    sourced = builtins.list(sourced)
    for source, obj in sourced:
        meta = obj.get("metadata")
        if not obj.get("apiVersion") or not obj.get("kind") or not isinstance(meta, dict) or not meta.get("name"):
            raise SeedError(
                f"{source}: every object needs apiVersion, kind and metadata.name "
                f"(got kind {obj.get('kind')!r}, name {(meta or {}).get('name')!r})"
            )
    definitions = [dict(c) for c in crds] + [o for _, o in sourced if o.get("kind") == "CustomResourceDefinition"]
    rest = [(s, o) for s, o in sourced if o.get("kind") != "CustomResourceDefinition"]
    try:
        api.seed(definitions)
    except ApiError as exc:
        raise SeedError(f"a CustomResourceDefinition was refused: {exc}") from exc
    for source, obj in rest:
        if not api.serves(str(obj["apiVersion"]), str(obj["kind"])):
            raise SeedError(
                f"{source}: kind {obj['kind']} ({obj['apiVersion']}) has no CustomResourceDefinition: "
                "add the CRD to the objects, or pass --crds to create the CRDs of the enabled plugins' kinds"
            )
    try:
        api.seed([o for _, o in rest])
    except ApiError as exc:
        raise SeedError(f"seeding failed: {exc}") from exc
    return len(definitions) + len(rest)


def serve(objects_dir: str | None, port: int, kubeconfig: str | None, crds: Iterable[Mapping[str, Any]] = ()) -> None:
    """Run one emulator until SIGINT/SIGTERM: seed it, write the kubeconfig, print the URL first.

    ``objects_dir`` is a folder of YAML/JSON files or ``-`` (stdin); ``crds`` are created
    first. Objects that cannot be seeded raise :class:`SeedError` before anything is served.
    """
    api = KubeAPI(port=port)
    sourced = _sourced_objects(objects_dir) if objects_dir else []
    seed_checked(api, sourced, crds)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with api:
            if kubeconfig:
                api.write_kubeconfig(kubeconfig)
            print(api.url, flush=True)
            while not stop.wait(0.5):
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
