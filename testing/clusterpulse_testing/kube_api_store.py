"""The object store of the Kubernetes API emulator: resources, objects, versions and watch history.

The store is synchronous and not thread-safe on purpose: :class:`~.kube_api.KubeAPI` runs every
call on the emulator's event-loop thread (or directly while the server is stopped), so the store
never needs a lock and watch subscriptions never miss an event.

Stored objects are never mutated in place: every write stores a new dict, so the HTTP layer can
serialise an object it got from the store without copying it.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import collections
import itertools
import json
import secrets
import string
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterpulse_core.openapi import apply_defaults

from .kube_api_schema import validate as validate_schema
from .kube_api_util import ApiError, ObjectPredicate, bad_request, now_rfc3339, spec_changed

Obj = dict[str, Any]
StoreKey = tuple[str, str]  # (group, plural): all versions of a resource share one storage
ObjectKey = tuple[str, str]  # (namespace or "", name)

DEFAULT_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"


@dataclass(frozen=True)
class ResourceType:
    """One served resource: what discovery reports and what storage needs."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = DEFAULT_VERBS
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    from_crd: bool = False
    #: The version's ``openAPIV3Schema`` (CRD-backed types only): its defaults apply on writes,
    #: then the object is validated against it (create and update).
    schema: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        """``group/version``, or just ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def store_key(self) -> StoreKey:
        """The storage shared by all versions of this resource."""
        return (self.group, self.plural)

    @property
    def status_subresource(self) -> bool:
        """Whether ``.status`` is written only through the ``/status`` subresource."""
        return "status" in self.subresources

    def matches_name(self, name: str) -> bool:
        """Whether ``name`` is this resource's plural, kind, singular or a short name."""
        lowered = name.lower()
        return lowered in (self.plural, self.kind.lower(), self.singular) or lowered in self.short_names


@dataclass(eq=False)
class WatchEvent:
    """One change: its resourceVersion, the new (or last) object, and the object before it."""

    rv: int
    store_key: StoreKey
    type: str
    obj: Obj
    old: Obj | None = None


@dataclass(eq=False)
class Watcher:
    """A live subscription: events of one resource are put into its queue (None = closed)."""

    store_key: StoreKey
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)


@dataclass
class ListPage:
    """One page of a list: items, the list resourceVersion, and pagination hints."""

    items: list[Obj]
    resource_version: int
    continue_token: str | None = None
    remaining: int | None = None


def crd_resource_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types (one per served version) declared by a CustomResourceDefinition."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    plural = names.get("plural") or ""
    kind = names.get("kind") or ""
    if not spec.get("group") or not plural or not kind:
        raise ApiError(422, "Invalid", "a CustomResourceDefinition needs spec.group, names.plural and kind")
    result = []
    for version in spec.get("versions") or []:
        if version.get("served", True) is False:
            continue
        subresources = tuple(sorted((version.get("subresources") or {}).keys()))
        result.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=plural,
                kind=kind,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular") or kind.lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subresources,
                from_crd=True,
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            )
        )
    return result


def apply_schema_defaults(resource_type: ResourceType, obj: Obj) -> Obj:
    """A custom resource with its structural schema's defaults applied, as an API server does on writes.

    Defaulting only: schema *validation* is a separate step.
    """
    if not resource_type.schema:
        return obj
    defaulted: Obj = apply_defaults(resource_type.schema, obj)
    return defaulted


def _encode_continue(rv: int, key: ObjectKey) -> str:
    raw = json.dumps({"rv": rv, "start": list(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, ObjectKey]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError):
        raise bad_request("continue key is not valid") from None


def _without_rv(obj: Mapping[str, Any]) -> Obj:
    meta = {key: value for key, value in (obj.get("metadata") or {}).items() if key != "resourceVersion"}
    return {**obj, "metadata": meta}


def _random_suffix() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(5))


class ObjectStore:
    """In-memory Kubernetes storage with one resourceVersion counter and a bounded event history."""

    def __init__(
        self, resource_types: Iterable[ResourceType] = (), history_limit: int = 50_000, first_resource_version: int = 0
    ) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._objects: dict[StoreKey, dict[ObjectKey, Obj]] = collections.defaultdict(dict)
        self._keys: dict[StoreKey, list[ObjectKey]] = collections.defaultdict(list)
        # Like etcd's revision, the counter survives restarts of the same data: an emulator started
        # later starts higher, so a client's remembered resourceVersion is never "from the future"
        # by accident, and one really from the future gets 410 as from a real API server.
        self._rv = max(0, first_resource_version)
        self._history: collections.deque[WatchEvent] = collections.deque()
        self._history_limit = max(1, history_limit)
        self._horizon = self._rv  # every event with rv > horizon is still in the history
        self._watchers: dict[StoreKey, set[Watcher]] = collections.defaultdict(set)
        for resource_type in resource_types:
            self.register(resource_type)

    # --- resource types ---------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out."""
        return self._rv

    def register(self, resource_type: ResourceType) -> None:
        """Serve a resource type (replacing an earlier registration of the same group/version/plural)."""
        key = (resource_type.group, resource_type.version, resource_type.plural)
        self._types[key] = resource_type

    def unregister(self, group: str, plural: str) -> None:
        """Stop serving every version of a resource and drop its objects."""
        for key in [key for key in self._types if (key[0], key[2]) == (group, plural)]:
            del self._types[key]
        self._objects.pop((group, plural), None)
        self._keys.pop((group, plural), None)

    def resource_types(self) -> list[ResourceType]:
        """Every served resource type."""
        return list(self._types.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource type served at ``/api(s)/group/version/plural``, if any."""
        return self._types.get((group, version, plural))

    def resolve(self, api_version: str, name: str) -> ResourceType:
        """Find a resource type by apiVersion and its plural, kind, singular or short name."""
        group, _, version = api_version.rpartition("/")
        exact = self._types.get((group, version, name))
        if exact is not None:
            return exact
        for resource_type in self._types.values():
            same_version = (resource_type.group, resource_type.version) == (group, version)
            if same_version and resource_type.matches_name(name):
                return resource_type
        message = f"the server doesn't have a resource type {name!r} in {api_version!r}"
        raise ApiError(404, "NotFound", message)

    # --- reading ---------------------------------------------------------------------------------

    def _object_key(self, resource_type: ResourceType, namespace: str | None, name: str) -> ObjectKey:
        return ((namespace or "") if resource_type.namespaced else "", name)

    def _not_found(self, resource_type: ResourceType, name: str) -> ApiError:
        details = {"name": name, "group": resource_type.group, "kind": resource_type.plural}
        return ApiError(404, "NotFound", f'{resource_type.plural} "{name}" not found', details)

    def _served(self, resource_type: ResourceType, obj: Obj) -> Obj:
        if obj.get("apiVersion") == resource_type.api_version:
            return obj
        return {**obj, "apiVersion": resource_type.api_version}

    def get(self, resource_type: ResourceType, namespace: str | None, name: str) -> Obj:
        """The stored object, or a 404 ApiError."""
        key = self._object_key(resource_type, namespace, name)
        obj = self._objects[resource_type.store_key].get(key)
        if obj is None:
            raise self._not_found(resource_type, name)
        return self._served(resource_type, obj)

    def _key_range(self, resource_type: ResourceType, namespace: str | None) -> tuple[int, int]:
        keys = self._keys[resource_type.store_key]
        if not namespace or not resource_type.namespaced:
            return 0, len(keys)
        return bisect.bisect_left(keys, (namespace,)), bisect.bisect_left(keys, (namespace + "\x00",))

    def list_page(
        self,
        resource_type: ResourceType,
        namespace: str | None = None,
        predicate: ObjectPredicate | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListPage:
        """One page of objects in key order (namespace, name); O(page) with a continue token."""
        store_key = resource_type.store_key
        keys, objects = self._keys[store_key], self._objects[store_key]
        start, end = self._key_range(resource_type, namespace)
        if continue_token:
            token_rv, after = _decode_continue(continue_token)
            if token_rv < self._horizon:
                raise ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a "
                    "consistent list result. You can start a new list without the continue "
                    "parameter.",
                )
            start = max(start, bisect.bisect_right(keys, after))
        items: list[Obj] = []
        index = start
        while index < end and not (limit and len(items) >= limit):
            obj = objects[keys[index]]
            index += 1
            if predicate is None or predicate(obj):
                items.append(self._served(resource_type, obj))
        page = ListPage(items=items, resource_version=self._rv)
        if limit and index < end:
            page.continue_token = _encode_continue(self._rv, keys[index - 1])
            page.remaining = end - index if predicate is None else None
        return page

    # --- writing ---------------------------------------------------------------------------------

    def _emit(self, event_type: str, resource_type: ResourceType, obj: Obj, old: Obj | None) -> None:
        event = WatchEvent(self._rv, resource_type.store_key, event_type, obj, old)
        self._history.append(event)
        while len(self._history) > self._history_limit:
            self._horizon = self._history.popleft().rv
        for watcher in self._watchers.get(resource_type.store_key, ()):
            watcher.queue.put_nowait(event)

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _store(self, resource_type: ResourceType, key: ObjectKey, obj: Obj) -> None:
        objects = self._objects[resource_type.store_key]
        if key not in objects:
            bisect.insort(self._keys[resource_type.store_key], key)
        objects[key] = obj

    def _forget(self, resource_type: ResourceType, key: ObjectKey) -> None:
        keys = self._keys[resource_type.store_key]
        index = bisect.bisect_left(keys, key)
        if index < len(keys) and keys[index] == key:
            del keys[index]
        self._objects[resource_type.store_key].pop(key, None)

    def _namespace_for(self, resource_type: ResourceType, body_ns: str | None, path_ns: str | None) -> str:
        if not resource_type.namespaced:
            return ""
        if path_ns and body_ns and path_ns != body_ns:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        return path_ns or body_ns or "default"

    def create(
        self,
        resource_type: ResourceType,
        obj: Mapping[str, Any],
        namespace: str | None = None,
        keep_status: bool = True,
        validate: bool = True,
    ) -> Obj:
        """Store a new object (409 AlreadyExists if taken); returns it with server-set metadata.

        ``validate=False`` stores a custom resource its CRD's schema refuses, as one stored under
        an earlier, looser CRD (an API server validates writes, not what it already holds).
        """
        meta = dict(obj.get("metadata") or {})
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = f"{meta['generateName']}{_random_suffix()}"
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value: name or generateName is required")
        ns = self._namespace_for(resource_type, meta.get("namespace"), namespace)
        key = (ns, name)
        if key in self._objects[resource_type.store_key]:
            details = {"name": name, "group": resource_type.group, "kind": resource_type.plural}
            raise ApiError(409, "AlreadyExists", f'{resource_type.plural} "{name}" already exists', details)
        meta.pop("deletionTimestamp", None)
        meta.pop("namespace", None)
        meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1)
        if resource_type.namespaced:
            meta["namespace"] = ns
        rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        new: Obj = {"apiVersion": resource_type.api_version, "kind": resource_type.kind, "metadata": meta, **rest}
        if not keep_status and resource_type.from_crd and resource_type.status_subresource:
            new.pop("status", None)
        if resource_type.store_key == (CRD_GROUP, CRD_PLURAL):
            new = self._accept_crd(new)
        new = apply_schema_defaults(resource_type, new)
        if validate:
            self._validate(resource_type, new)
        meta["resourceVersion"] = self._next_rv()  # only once nothing can fail: one rv, one event
        self._store(resource_type, key, new)
        self._emit("ADDED", resource_type, new, None)
        return new

    def update(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        subresource: str | None = None,
        validate: bool = True,
    ) -> Obj:
        """Replace an object (PUT semantics); 409 Conflict on a stale ``metadata.resourceVersion``.

        ``validate=False``: as :meth:`create`.
        """
        old = self.get(resource_type, namespace, name)
        meta_in = body.get("metadata") or {}
        if meta_in.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({meta_in.get('name')}) does not match the name on the URL ({name})"
            )
        rv_in = meta_in.get("resourceVersion")
        if rv_in and str(rv_in) != old["metadata"]["resourceVersion"]:
            details = {"name": name, "group": resource_type.group, "kind": resource_type.plural}
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource_type.plural} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                details,
            )
        if subresource == "status":
            new = {key: value for key, value in old.items() if key != "status"}
            if "status" in body:
                new["status"] = body["status"]
        else:
            new = self._replace_main(resource_type, old, body)
        new = apply_schema_defaults(resource_type, new)
        if validate:
            self._validate(resource_type, new, old)
        return self._commit(resource_type, old, new)

    @staticmethod
    def _validate(resource_type: ResourceType, obj: Obj, old: Obj | None = None) -> None:
        """422 Invalid when a custom resource does not match its CRD's schema (as a real server)."""
        if resource_type.schema is None:
            return
        errors = validate_schema(obj, resource_type.schema, old)
        if errors:
            name = (obj.get("metadata") or {}).get("name", "")
            kind = f"{resource_type.kind}.{resource_type.group}"
            # One error stands alone, several are bracketed (apimachinery's aggregate error).
            listed = str(errors[0]) if len(errors) == 1 else f"[{', '.join(map(str, errors))}]"
            details = {
                "name": name,
                "group": resource_type.group,
                "kind": resource_type.kind,
                "causes": [error.cause() for error in errors],
            }
            raise ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {listed}', details)

    def _replace_main(self, resource_type: ResourceType, old: Obj, body: Mapping[str, Any]) -> Obj:
        old_meta = old["metadata"]
        meta = dict(body.get("metadata") or {})
        for kept in ("name", "namespace", "uid", "creationTimestamp", "generation", "deletionTimestamp"):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        rest = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata", "status")}
        new: Obj = {"apiVersion": old["apiVersion"], "kind": old["kind"], "metadata": meta, **rest}
        status = old.get("status") if resource_type.status_subresource else body.get("status")
        if status is not None:
            new["status"] = status
        return new

    def _commit(self, resource_type: ResourceType, old: Obj, new: Obj) -> Obj:
        """Store a changed object: bump generation on spec changes, emit MODIFIED (or DELETED)."""
        if _without_rv(new) == _without_rv(old):
            return old  # a no-op write changes nothing, like a real API server
        if resource_type.store_key == (CRD_GROUP, CRD_PLURAL):
            self._register_crd(new)
        meta = dict(new["metadata"])
        if spec_changed(old, new):
            meta["generation"] = int(old["metadata"].get("generation") or 1) + 1
        meta["resourceVersion"] = self._next_rv()
        new = {**new, "metadata": meta}
        key = self._object_key(resource_type, meta.get("namespace"), meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._forget(resource_type, key)
            self._emit("DELETED", resource_type, new, old)
            self._after_delete(resource_type, new)
            return new
        self._store(resource_type, key, new)
        self._emit("MODIFIED", resource_type, new, old)
        return new

    def delete(
        self, resource_type: ResourceType, namespace: str | None, name: str, resource_version: str | None = None
    ) -> Obj:
        """Delete an object; with finalizers, only mark it (deletionTimestamp) until they are removed.

        ``resource_version`` is a DeleteOptions precondition: 409 Conflict when the object changed.
        """
        old = self.get(resource_type, namespace, name)
        meta = old["metadata"]
        if resource_version and meta.get("resourceVersion") != resource_version:
            raise ApiError(
                409,
                "Conflict",
                f"Precondition failed: ResourceVersion in precondition: "
                f"{resource_version}, ResourceVersion in object meta: "
                f"{meta.get('resourceVersion')}",
            )
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return old
            marked = {**old, "metadata": {**meta, "deletionTimestamp": now_rfc3339()}}
            return self._commit(resource_type, old, marked)
        final = {**old, "metadata": {**meta, "resourceVersion": self._next_rv()}}
        self._forget(resource_type, self._object_key(resource_type, namespace, name))
        self._emit("DELETED", resource_type, final, old)
        self._after_delete(resource_type, final)
        return final

    # --- CustomResourceDefinitions ---------------------------------------------------------------

    def _accept_crd(self, crd: Obj) -> Obj:
        types = crd_resource_types(crd)
        for resource_type in types:
            self.register(resource_type)
        names = (crd.get("spec") or {}).get("names") or {}
        conditions = [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"},
        ]
        return {
            **crd,
            "status": {"conditions": conditions, "acceptedNames": names, "storedVersions": [t.version for t in types]},
        }

    def _register_crd(self, crd: Obj) -> None:
        for resource_type in crd_resource_types(crd):
            self.register(resource_type)

    def _after_delete(self, resource_type: ResourceType, obj: Obj) -> None:
        if resource_type.store_key == (CRD_GROUP, CRD_PLURAL):
            spec = obj.get("spec") or {}
            self.unregister(spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))

    # --- watching --------------------------------------------------------------------------------

    def _history_since(self, rv: int) -> Iterator[WatchEvent]:
        # Every write takes exactly one resourceVersion and emits exactly one event, so the
        # history holds consecutive versions and the start index is plain arithmetic.
        if not self._history:
            return iter(())
        first = self._history[0].rv
        return itertools.islice(self._history, max(0, rv - first + 1), None)

    def watch(self, resource_type: ResourceType, since: str | None) -> tuple[list[WatchEvent], Watcher]:
        """Subscribe; returns the events to send first and the live subscription.

        No (or ``"0"``) resourceVersion: a synthetic ADDED per current object. Otherwise the
        stored history after it, or a 410 ApiError when it is older than the retained history.
        """
        store_key = resource_type.store_key
        if not since or since == "0":
            objects = self._objects[store_key]
            initial = [
                WatchEvent(int(obj["metadata"]["resourceVersion"]), store_key, "ADDED", obj)
                for obj in (objects[key] for key in self._keys[store_key])
            ]
        else:
            try:
                rv = int(since)
            except ValueError:
                raise bad_request(f"invalid resourceVersion: {since!r}") from None
            if rv < self._horizon:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self._horizon + 1})")
            if rv > self._rv:
                raise ApiError(410, "Expired", f"too large resource version: {rv}, current: {self._rv}")
            initial = [event for event in self._history_since(rv) if event.store_key == store_key]
        watcher = Watcher(store_key)
        self._watchers[store_key].add(watcher)
        return initial, watcher

    def unwatch(self, watcher: Watcher) -> None:
        """End a subscription."""
        self._watchers.get(watcher.store_key, set()).discard(watcher)

    def close_watchers(self) -> None:
        """Tell every live subscription to end (the server is stopping)."""
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.queue.put_nowait(None)
        self._watchers.clear()

    def compact(self) -> int:
        """Forget the event history: any older resourceVersion now gets 410 Gone. Returns the horizon."""
        self._history.clear()
        self._horizon = self._rv
        return self._horizon
