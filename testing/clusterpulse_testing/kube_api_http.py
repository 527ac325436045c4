"""The HTTP side of the Kubernetes API emulator, and the only module that imports kmock.

kmock (pinned to 0.8) provides the aiohttp request handler base (:class:`kmock.KubernetesScaffold`):
the API discovery endpoints (``/``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>[/<version>]``),
Kubernetes-style error rendering for anything unhandled, the user-extensible reaction DSL, and the
bundled catalogue of builtin resources. Everything stateful lives here and in the store, because
kmock's own ``KubernetesEmulator`` has no resourceVersions, PUT, pagination, selectors, resumable
watches or status subresources, and its path parser fails on ``/api/v1/namespaces``.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import aiohttp.web
import attrs
import kmock
import msgspec
import yaml

from .kube_api_store import ListPage, ObjectStore, ResourceType, Watcher, WatchEvent
from .kube_api_util import (
    ApiError,
    ObjectPredicate,
    ResourcePath,
    all_of,
    bad_request,
    json_patch,
    merge_patch,
    parse_field_selector,
    parse_label_selector,
    parse_resource_path,
    reason_for,
    status_body,
)

JSON_TYPE = "application/json"
HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
KMOCK_REQUEST_LOG_LIMIT = 1_000

DEFAULT_VERSION: dict[str, str] = {
    "major": "1",
    "minor": "29",
    "gitVersion": "v1.29.2",
    "gitCommit": "4b8e819355d791d96b7e9d9efe4cbafae2311c88",
    "gitTreeState": "clean",
    "buildDate": "2024-02-14T10:32:40Z",
    "goVersion": "go1.21.7",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@functools.cache
def builtin_resource_types() -> tuple[ResourceType, ...]:
    """The builtin resources of kmock's bundled catalogue (a recent K3s), as resource types."""
    catalogue = kmock.ResourcesArray()
    with warnings.catch_warnings():  # kmock 0.8 uses the deprecated importlib.resources.read_binary
        warnings.simplefilter("ignore", DeprecationWarning)
        catalogue.load_bundled()
    types = []
    for resource in catalogue:
        info = catalogue[resource]
        types.append(
            ResourceType(
                group=resource.group or "",
                version=resource.version or "",
                plural=resource.plural or "",
                kind=info.kind or "",
                namespaced=bool(info.namespaced),
                singular=info.singular or "",
                short_names=tuple(sorted(info.shortnames)),
                verbs=tuple(sorted(info.verbs)),
                categories=tuple(sorted(info.categories)),
                subresources=tuple(sorted(info.subresources)),
            )
        )
    return tuple(types)


#: Where the OpenAPI v3 documents are served (kubectl reads them before ``apply``).
OPENAPI_V3 = "/openapi/v3"


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def openapi_index(types: list[ResourceType]) -> dict[str, Any]:
    """``GET /openapi/v3``: one document per served group/version."""
    paths = sorted({_gv_path(t.group, t.version) for t in types})
    return {"paths": {path: {"serverRelativeURL": f"{OPENAPI_V3}/{path}"} for path in paths}}


def openapi_document(types: list[ResourceType], gv_path: str) -> dict[str, Any] | None:
    """``GET /openapi/v3/<api/v1|apis/G/V>``: each kind's object paths and their verbs.

    Enough for kubectl: every PATCH names its group/version/kind and takes ``fieldValidation``,
    so kubectl leaves validation to the server; the kinds' schemas are not described (CRD
    schemas are checked by the emulator on writes).
    """
    served = [t for t in types if _gv_path(t.group, t.version) == gv_path]
    if not served:
        return None
    parameter = {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
    paths: dict[str, Any] = {}
    for t in served:
        gvk = {"group": t.group, "version": t.version, "kind": t.kind}
        scope = "/namespaces/{namespace}" if t.namespaced else ""
        operation = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [parameter],
            "responses": {"200": {"description": "OK"}},
        }
        paths[f"/{gv_path}{scope}/{t.plural}/{{name}}"] = {
            "get": operation,
            "put": operation,
            "patch": operation,
            "delete": operation,
        }
        paths[f"/{gv_path}{scope}/{t.plural}"] = {"get": operation, "post": operation}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes API emulator", "version": "v1"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _discovery_catalogue(types: list[ResourceType]) -> kmock.ResourcesArray:
    catalogue = kmock.ResourcesArray()
    for resource_type in types:
        catalogue[kmock.resource(resource_type.group, resource_type.version, resource_type.plural)] = (
            kmock.ResourceInfo(
                namespaced=resource_type.namespaced,
                kind=resource_type.kind,
                singular=resource_type.singular,
                verbs=set(resource_type.verbs),
                shortnames=set(resource_type.short_names),
                categories=set(resource_type.categories),
                subresources=set(resource_type.subresources),
            )
        )
    return catalogue


# --- controls shared with the owning KubeAPI (thread-safe) ------------------------------------------


@dataclass
class _Failure:
    pattern: re.Pattern[str]
    status: int
    remaining: int | None
    method: str | None


@dataclass(frozen=True)
class WriteRecord:
    """One write request (not GET) as served: wall time, method, path, the writer's User-Agent, status."""

    time: float
    method: str
    path: str
    user_agent: str


@dataclass(frozen=True)
class RequestRecord:
    """One request as served: wall time, method, path, the caller's User-Agent."""

    time: float
    method: str
    path: str
    user_agent: str


@dataclass
class Controls:
    """Test knobs read by the HTTP layer and set from the test thread: auth, faults, request log."""

    require_token: str | None = None
    version: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_VERSION))
    request_log_limit: int = 10_000
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _failures: list[_Failure] = field(default_factory=list)
    _delays: list[tuple[re.Pattern[str], float]] = field(default_factory=list)
    _log: deque[tuple[str, str, dict[str, str]]] = field(default_factory=deque)
    _writes: deque[WriteRecord] = field(default_factory=deque)
    _callers: deque[RequestRecord] = field(default_factory=deque)

    def add_failure(self, path_regex: str, status: int, times: int | None, method: str | None) -> None:
        """Fail matching requests with ``status`` (``times`` times, or until cleared)."""
        failure = _Failure(re.compile(path_regex), status, times, method.upper() if method else None)
        with self._lock:
            self._failures.append(failure)

    def add_delay(self, path_regex: str, seconds: float) -> None:
        """Delay matching requests by ``seconds`` before they are served."""
        with self._lock:
            self._delays.append((re.compile(path_regex), seconds))

    def clear(self, failures: bool = True, delays: bool = True) -> None:
        """Drop injected failures and/or delays."""
        with self._lock:
            if failures:
                self._failures.clear()
            if delays:
                self._delays.clear()

    def take_failure(self, method: str, path: str) -> int | None:
        """The status to fail this request with, if an injected failure matches (consumes one)."""
        with self._lock:
            for failure in self._failures:
                if failure.method not in (None, method) or not failure.pattern.search(path):
                    continue
                if failure.remaining is not None:
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._failures.remove(failure)
                return failure.status
        return None

    def delay_for(self, path: str) -> float:
        """The total injected delay for this path."""
        with self._lock:
            return sum(seconds for pattern, seconds in self._delays if pattern.search(path))

    def log(self, method: str, path: str, query: dict[str, str], user_agent: str = "") -> None:
        """Remember a request, and who made it (bounded)."""
        with self._lock:
            self._log.append((method, path, query))
            self._callers.append(RequestRecord(time.time(), method, path, user_agent))
            while len(self._log) > self.request_log_limit:
                self._log.popleft()
            while len(self._callers) > self.request_log_limit:
                self._callers.popleft()

    def log_write(self, record: WriteRecord) -> None:
        """Remember a write request with the writer's identity (bounded)."""
        with self._lock:
            self._writes.append(record)
            while len(self._writes) > self.request_log_limit:
                self._writes.popleft()

    def writes(self) -> list[WriteRecord]:
        """A copy of the write log, oldest first."""
        with self._lock:
            return list(self._writes)

    def requests(self) -> list[tuple[str, str, dict[str, str]]]:
        """A copy of the request log, oldest first."""
        with self._lock:
            return list(self._log)

    def callers(self) -> list[RequestRecord]:
        """A copy of the request log with each caller's User-Agent, oldest first."""
        with self._lock:
            return list(self._callers)

    def clear_log(self) -> None:
        """Forget the logged requests."""
        with self._lock:
            self._log.clear()
            self._callers.clear()


# --- responses ----------------------------------------------------------------------------------------


def json_response(body: Any, status: int = 200) -> aiohttp.web.Response:
    """A JSON response encoded with msgspec (fast for big lists)."""
    return aiohttp.web.Response(body=msgspec.json.encode(body), status=status, content_type=JSON_TYPE)


def error_response(error: ApiError) -> aiohttp.web.Response:
    """An ApiError as a ``Status`` response."""
    return json_response(error.status(), status=error.code)


def _list_body(resource_type: ResourceType, page: ListPage) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    return {
        "apiVersion": resource_type.api_version,
        "kind": f"{resource_type.kind}List",
        "metadata": meta,
        "items": page.items,
    }


def _decode_body(body: bytes, content_type: str) -> Any:
    if not body:
        raise bad_request("the request body is empty")
    try:
        if "yaml" in content_type:
            return yaml.safe_load(body)
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, yaml.YAMLError) as exc:
        raise bad_request(f"the request body is not valid: {exc}") from None


def _apply_patch(content_type: str, current: dict[str, Any], patch: Any) -> Any:
    if content_type.startswith("application/json-patch+json"):
        return json_patch(current, patch)
    if not isinstance(patch, dict):
        raise bad_request("a merge patch must be a JSON object")
    # merge-patch, strategic-merge-patch (treated as a merge patch) and apply-patch (likewise).
    return merge_patch(current, patch)


def _watch_event(event: WatchEvent, predicate: ObjectPredicate | None) -> tuple[str, dict[str, Any]] | None:
    """The event as this watcher sees it: entering/leaving its selection is ADDED/DELETED."""
    if predicate is None:
        return event.type, event.obj
    if event.type == "MODIFIED":
        was, now = event.old is not None and predicate(event.old), predicate(event.obj)
        if was and now:
            return "MODIFIED", event.obj
        if now:
            return "ADDED", event.obj
        return ("DELETED", event.obj) if was else None
    return (event.type, event.obj) if predicate(event.obj) else None


def _encode_event(event_type: str, obj: Any) -> bytes:
    return msgspec.json.encode({"type": event_type, "object": obj}) + b"\n"


# --- the request dispatcher ---------------------------------------------------------------------------


class Backend:
    """Serves Kubernetes requests from an :class:`ObjectStore`, honouring the :class:`Controls`."""

    def __init__(self, store: ObjectStore, controls: Controls) -> None:
        self.store = store
        self.controls = controls

    async def handle(self, request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse | None:
        """Serve a request; None hands it over to kmock (discovery, reactions, 404)."""
        method, path = request.method.upper(), request.path
        query = dict(request.query)
        user_agent = request.headers.get("User-Agent", "")
        self.controls.log(method, path, query, user_agent)
        if method not in ("GET", "HEAD", "OPTIONS"):
            self.controls.log_write(WriteRecord(time.time(), method, path, user_agent))
        bare = path.rstrip("/") or "/"
        if bare in HEALTH_PATHS:
            return aiohttp.web.Response(text="ok")
        try:
            self._authorize(request)
            await self._inject_faults(method, path)
        except ApiError as error:
            return error_response(error)
        if bare == "/version":
            return json_response(self.controls.version)
        target = parse_resource_path(path)
        if target is None:
            return None
        try:
            return await self._serve_resource(request, method, target, query)
        except ApiError as error:
            return error_response(error)

    def _authorize(self, request: aiohttp.web.BaseRequest) -> None:
        expected = self.controls.require_token
        if expected is None:
            return
        # The scheme is case-insensitive, as the API server's (the in-cluster loader sends "bearer").
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or token != expected:
            raise ApiError(401, "Unauthorized", "Unauthorized")

    async def _inject_faults(self, method: str, path: str) -> None:
        delay = self.controls.delay_for(path)
        if delay > 0:
            await asyncio.sleep(delay)
        status = self.controls.take_failure(method, path)
        if status is not None:
            raise ApiError(status, reason_for(status), f"injected failure for {method} {path}")

    async def _serve_resource(
        self, request: aiohttp.web.BaseRequest, method: str, target: ResourcePath, query: dict[str, str]
    ) -> aiohttp.web.StreamResponse:
        resource_type = self.store.lookup(target.group, target.version, target.plural)
        if resource_type is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if target.subresource not in (None, "status") or (
            target.subresource == "status" and not resource_type.status_subresource
        ):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method == "GET" and query.get("watch") in ("true", "1"):
            return await self._watch(request, resource_type, target, query)
        if target.name is None:
            return await self._serve_collection(request, method, resource_type, target, query)
        return await self._serve_object(request, method, resource_type, target)

    async def _serve_collection(
        self,
        request: aiohttp.web.BaseRequest,
        method: str,
        resource_type: ResourceType,
        target: ResourcePath,
        query: dict[str, str],
    ) -> aiohttp.web.StreamResponse:
        if method == "GET":
            page = self.store.list_page(
                resource_type,
                target.namespace,
                self._predicate(query),
                self._limit(query),
                query.get("continue") or None,
            )
            return json_response(_list_body(resource_type, page))
        if method == "POST":
            body = _decode_body(await request.read(), request.content_type)
            if not isinstance(body, dict):
                raise bad_request("the object must be a JSON object")
            created = self.store.create(resource_type, body, target.namespace, keep_status=False)
            return json_response(created, status=201)
        if method == "DELETE":
            page = self.store.list_page(resource_type, target.namespace, self._predicate(query))
            deleted = [
                self.store.delete(
                    resource_type, target.namespace or obj["metadata"].get("namespace"), obj["metadata"]["name"]
                )
                for obj in page.items
            ]
            page.items = deleted
            return json_response(_list_body(resource_type, page))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on a collection")

    async def _serve_object(
        self, request: aiohttp.web.BaseRequest, method: str, resource_type: ResourceType, target: ResourcePath
    ) -> aiohttp.web.StreamResponse:
        name = target.name or ""
        if method == "GET":
            return json_response(self.store.get(resource_type, target.namespace, name))
        if method == "DELETE":
            # The deleted (or, with finalizers, the marked) object: typed clients expect either it
            # (pods, services, ...) or a Status, and an object decodes fine as a Status too. A
            # DeleteOptions body may carry a resourceVersion precondition.
            raw = await request.read()
            options = _decode_body(raw, request.content_type) if raw else None
            preconditions = options.get("preconditions") if isinstance(options, dict) else None
            version = preconditions.get("resourceVersion") if isinstance(preconditions, dict) else None
            return json_response(
                self.store.delete(resource_type, target.namespace, name, str(version) if version else None)
            )
        if method not in ("PUT", "PATCH"):
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on an object")
        body = _decode_body(await request.read(), request.content_type)
        if method == "PATCH":
            current = self.store.get(resource_type, target.namespace, name)
            body = _apply_patch(request.content_type, current, body)
        if not isinstance(body, dict):
            raise bad_request("the object must be a JSON object")
        updated = self.store.update(resource_type, target.namespace, name, body, target.subresource)
        return json_response(updated)

    @staticmethod
    def _limit(query: dict[str, str]) -> int | None:
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise bad_request(f"invalid limit: {query.get('limit')!r}") from None
        return limit if limit > 0 else None

    @staticmethod
    def _predicate(query: dict[str, str], name: str | None = None) -> ObjectPredicate | None:
        by_name = parse_field_selector(f"metadata.name={name}") if name else None
        return all_of(
            parse_label_selector(query.get("labelSelector")), parse_field_selector(query.get("fieldSelector")), by_name
        )

    async def _watch(
        self,
        request: aiohttp.web.BaseRequest,
        resource_type: ResourceType,
        target: ResourcePath,
        query: dict[str, str],
    ) -> aiohttp.web.StreamResponse:
        by_namespace = (
            parse_field_selector(f"metadata.namespace={target.namespace}")
            if (target.namespace and resource_type.namespaced)
            else None
        )
        predicate = all_of(self._predicate(query, target.name), by_namespace)
        timeout = self._timeout(query)
        response = aiohttp.web.StreamResponse(headers={"Content-Type": JSON_TYPE})
        try:
            initial, watcher = self.store.watch(resource_type, query.get("resourceVersion"))
        except ApiError as error:
            if error.code != 410:
                raise
            await response.prepare(request)
            await response.write(_encode_event("ERROR", error.status()))
            await response.write_eof()
            return response
        try:
            await response.prepare(request)
            await self._stream(response, initial, watcher, predicate, timeout)
            await response.write_eof()
        except ConnectionError:
            pass  # the client went away
        finally:
            self.store.unwatch(watcher)
        return response

    @staticmethod
    def _timeout(query: dict[str, str]) -> float | None:
        raw = query.get("timeoutSeconds")
        try:
            return float(raw) if raw else None
        except ValueError:
            raise bad_request(f"invalid timeoutSeconds: {raw!r}") from None

    @staticmethod
    async def _stream(
        response: aiohttp.web.StreamResponse,
        initial: list[WatchEvent],
        watcher: Watcher,
        predicate: ObjectPredicate | None,
        timeout: float | None,
    ) -> None:
        for event in initial:
            seen = _watch_event(event, predicate)
            if seen is not None:
                await response.write(_encode_event(*seen))
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return
            try:
                live = await asyncio.wait_for(watcher.queue.get(), remaining)
            except TimeoutError:
                return
            if live is None:
                return
            seen = _watch_event(live, predicate)
            if seen is not None:
                await response.write(_encode_event(*seen))


# --- the kmock handler ----------------------------------------------------------------------------------


@attrs.define(kw_only=True)
class KubeAPIHandler(kmock.KubernetesScaffold):
    """kmock's Kubernetes scaffold with the emulator's stateful routes in front of it."""

    backend: Backend

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """Serve from the backend; what it does not claim goes to kmock (discovery, DSL, 404)."""
        if raw_request.method == "GET" and raw_request.path.rstrip("/").startswith(OPENAPI_V3):
            types = list(self.backend.store.resource_types())
            rest = raw_request.path.rstrip("/")[len(OPENAPI_V3) :].lstrip("/")
            document = openapi_index(types) if not rest else openapi_document(types, rest)
            if document is not None:
                return json_response(document)
            return json_response(status_body(404, reason_for(404), f"no OpenAPI document for {rest}"), status=404)
        response = await self.backend.handle(raw_request)
        if response is not None:
            return response
        if len(self._requests) > KMOCK_REQUEST_LOG_LIMIT:
            del self._requests[: len(self._requests) - KMOCK_REQUEST_LOG_LIMIT]
        path = raw_request.path
        if path != "/" and path.endswith("/"):  # clients ask for /api/v1/ and /apis/
            raw_request = raw_request.clone(rel_url=raw_request.rel_url.with_path(path.rstrip("/")))
        return await super().__call__(raw_request)

    def _get_resources(self) -> list[kmock.resource]:
        self._resources = _discovery_catalogue(self.backend.store.resource_types())
        return super()._get_resources()

    async def _serve_api(self, request: kmock.Request) -> kmock.Payload:
        address = {"clientCIDR": "0.0.0.0/0", "serverAddress": request.url.host}
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [address]}

    async def _serve_version(self, request: kmock.Request) -> kmock.Payload:
        """kmock's APIResourceList, with the core group's ``groupVersion: v1`` (not ``/v1``): kubectl
        keys its discovery cache by it, and ``/v1`` made ``kubectl get nodes`` find no resource."""
        payload = await super()._serve_version(request)
        if isinstance(payload, dict) and str(payload.get("groupVersion", "")).startswith("/"):
            payload = {**payload, "groupVersion": payload["groupVersion"][1:]}
        return payload

    async def _serve_server_version(self, request: kmock.Request) -> kmock.Payload:
        return dict(self.backend.controls.version)

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, kmock.KubernetesError):
            code = exc.status
            return json_response(status_body(code, reason_for(code), exc.message or str(exc)), status=code)
        return await super()._render_error(exc)
