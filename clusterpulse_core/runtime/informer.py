"""A list/watch informer for one resource kind, with a cache of the current objects.

The informer lists the kind (paginated, raw JSON), then watches from the list's
resourceVersion and keeps a cache keyed by ``(namespace, name)``. Handlers receive add,
update and delete events and, every ``resync_period``, every cached object again.

Failure handling follows client-go's reflector:

* **410 Gone** (an HTTP 410 or an ``ERROR`` event with code 410): relist, then compare the
  fresh list with the cache and emit the ``ADDED``/``MODIFIED``/``DELETED`` events the broken
  watch missed, so no change is lost.
* **Silence**: a watch that delivers nothing for ``silence_limit`` seconds is restarted from
  the last resourceVersion (the stream's read timeout is the watchdog).
* **Other errors**: retried from the last resourceVersion after an exponential backoff
  (``backoff_initial`` doubling up to ``backoff_max``), reset once a call succeeds.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from urllib3.exceptions import HTTPError, ReadTimeoutError

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.kinds import ResourceKind
from clusterpulse_core.kube.client import GoneError, KubeApiError, KubeClient, NotFoundError, api_error, decode

log = logging.getLogger(__name__)

Obj = dict[str, Any]
CacheKey = tuple[str, str]

#: A watch that ends normally this fast without an event counts as a failure (no busy loop).
SHORT_WATCH = 1.0
READ_SIZE = 65536


class EventHandler(Protocol):
    """What an informer tells its handlers (called on the informer's thread; must be quick)."""

    def on_add(self, obj: Obj) -> None:
        """A new object (or one found by a relist)."""

    def on_update(self, old: Obj, new: Obj) -> None:
        """An object changed; ``old`` is the cached state before the change."""

    def on_delete(self, obj: Obj) -> None:
        """An object is gone; ``obj`` is its last known state."""

    def on_resync(self, obj: Obj) -> None:
        """The periodic resync: every cached object, unchanged."""


def cache_key(obj: Mapping[str, Any]) -> CacheKey:
    """``(namespace, name)`` of a raw object (namespace ``""`` for cluster-scoped ones)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def resource_version(obj: Mapping[str, Any]) -> str:
    """``metadata.resourceVersion`` of a raw object or list."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Backoff:
    """Exponential delay between retries: ``initial`` doubling up to ``maximum``."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self._next = initial

    def next_delay(self) -> float:
        """The delay before the next retry (and double the one after it)."""
        delay = self._next
        self._next = min(self._next * 2, self.maximum)
        return delay

    def reset(self) -> None:
        """Start again from ``initial`` (after a success)."""
        self._next = self.initial


class Informer:
    """List/watch of one kind in one namespace (all namespaces when ``namespace`` is None)."""

    def __init__(
        self,
        client: KubeClient,
        kind: ResourceKind,
        namespace: str | None,
        *,
        watch_timeout: int = 300,
        silence_limit: float = 600.0,
        resync_period: float = 300.0,
        page_size: int = 500,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.kind = kind
        self.namespace = namespace if kind.namespaced else None
        self.watch_timeout = watch_timeout
        self.silence_limit = silence_limit
        self.resync_period = resync_period
        self.page_size = page_size
        self._clock = clock
        self._backoff = Backoff(backoff_initial, backoff_max)
        self._handlers: list[EventHandler] = []
        self._cache: dict[CacheKey, Obj] = {}
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._resource_version = ""

    @classmethod
    def from_settings(
        cls, client: KubeClient, kind: ResourceKind, namespace: str | None, core: CoreSettings
    ) -> Informer:
        """An informer with the watch timings of the core settings."""
        return cls(
            client,
            kind,
            namespace,
            watch_timeout=core.watch_timeout,
            silence_limit=core.watch_silence_limit,
            resync_period=core.resync_period,
        )

    # ------------------------------------------------------------------ public API

    @property
    def name(self) -> str:
        """The kind's name (for logs and readiness reasons)."""
        return self.kind.kind

    def add_handler(self, handler: EventHandler) -> None:
        """Receive this informer's events (add handlers before :meth:`start`)."""
        self._handlers.append(handler)

    def start(self) -> None:
        """Start listing and watching on a background thread."""
        if self._thread is not None:
            raise RuntimeError(f"informer {self.name} already started")
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching (interrupting the open stream) and join the thread."""
        self._stopping.set()
        self._interrupt()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("informer %s did not stop within %.1f s", self.name, timeout)

    @property
    def has_synced(self) -> bool:
        """Whether the first list has filled the cache."""
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for the first list; False on timeout."""
        return self._synced.wait(timeout)

    @property
    def resource_version(self) -> str:
        """The last resourceVersion seen (list or watch)."""
        return self._resource_version

    def get(self, namespace: str, name: str) -> Obj | None:
        """The cached object, or None."""
        with self._lock:
            return self._cache.get((namespace or "", name))

    def items(self) -> list[Obj]:
        """Every cached object."""
        with self._lock:
            return list(self._cache.values())

    def cache_keys(self) -> list[CacheKey]:
        """Every cached ``(namespace, name)``."""
        with self._lock:
            return list(self._cache)

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        rv = ""
        next_resync = self._clock() + self.resync_period
        while not self._stopping.is_set():
            try:
                if not rv:
                    rv = self._relist()
                    self._backoff.reset()
                    continue
                if self._clock() >= next_resync:
                    rv = self._relist()
                    self._replay()
                    next_resync = self._clock() + self.resync_period
                    continue
                rv = self._watch_once(rv, next_resync)
            except GoneError as exc:
                log.info("watch of %s expired (%s); relisting", self.name, exc)
                rv = ""
            except NotFoundError:
                if self._stopping.is_set():
                    break
                delay = self._backoff.next_delay()
                log.warning("list/watch of %s failed: %s; retrying in %.1f s", self.name, self.kind.not_served, delay)
                self._stopping.wait(delay)
            except Exception as exc:
                if self._stopping.is_set():
                    break
                delay = self._backoff.next_delay()
                status = f" (HTTP {exc.status})" if isinstance(exc, KubeApiError) and exc.status else ""
                log.warning("list/watch of %s failed%s: %s; retrying in %.1f s", self.name, status, exc, delay)
                self._stopping.wait(delay)

    def _relist(self) -> str:
        """List everything, replace the cache, and emit the differences as events."""
        items, rv = self._list()
        fresh = {cache_key(obj): obj for obj in items}
        with self._lock:
            previous = self._cache
            self._cache = fresh
        for key, obj in fresh.items():
            old = previous.get(key)
            if old is None:
                self._dispatch("on_add", obj)
            elif resource_version(old) != resource_version(obj):
                self._dispatch("on_update", old, obj)
        for key, old in previous.items():
            if key not in fresh:
                self._dispatch("on_delete", old)
        self._resource_version = rv
        if not self._synced.is_set():
            log.info("informer %s synced: %d objects at resourceVersion %s", self.name, len(fresh), rv)
            self._synced.set()
        return rv

    def _list(self) -> tuple[list[Obj], str]:
        items: list[Obj] = []
        rv = ""
        path = self.kind.api_path(self.namespace)
        for page in self.client.list_decoded(path, decode, limit=self.page_size):
            if not rv:
                rv = resource_version(page)
            items.extend(page.get("items") or ())
        return items, rv

    def _replay(self) -> None:
        for obj in self.items():
            self._dispatch("on_resync", obj)

    def _watch_once(self, rv: str, next_resync: float) -> str:
        """One watch request from ``rv``; returns the last resourceVersion it delivered."""
        until_resync = max(next_resync - self._clock(), 1.0)
        timeout_seconds = max(1, min(self.watch_timeout, math.ceil(until_resync)))
        query = {"watch": True, "resourceVersion": rv, "allowWatchBookmarks": True, "timeoutSeconds": timeout_seconds}
        started = self._clock()
        response = self.client.raw(
            "GET", self.kind.api_path(self.namespace), query, timeout=self.silence_limit, stream=True
        )
        delivered = 0
        with self._lock:
            self._response = response
        try:
            if not self._stopping.is_set():
                for event in self._events(response):
                    rv = self._apply(event, rv)
                    delivered += 1
        except ReadTimeoutError:
            log.info("watch of %s silent for %.1f s; restarting it", self.name, self.silence_limit)
            response.close()
            return rv
        except (HTTPError, OSError) as exc:
            response.close()
            if self._stopping.is_set():
                return rv
            raise KubeApiError(0, f"watch of {self.name} broke: {exc}") from exc
        except BaseException:
            response.close()
            raise
        finally:
            with self._lock:
                self._response = None
        if self._stopping.is_set():
            response.close()
            return rv
        response.release_conn()
        if not delivered and self._clock() - started < SHORT_WATCH:
            raise KubeApiError(0, f"watch of {self.name} ended at once without events")
        self._backoff.reset()
        return rv

    @staticmethod
    def _events(response: Any) -> Iterator[Obj]:
        """The newline-delimited JSON events of a watch stream."""
        buffer = bytearray()
        while True:
            chunk = response.read1(READ_SIZE)
            if not chunk:
                break
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", start)) >= 0:
                line = bytes(buffer[start:end]).strip()
                start = end + 1
                if line:
                    yield decode(line)
            del buffer[:start]
        if bytes(buffer).strip():
            yield decode(bytes(buffer))

    def _apply(self, event: Mapping[str, Any], rv: str) -> str:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            raise api_error(code, None, f"watch of {self.name}: {obj.get('message') or obj}")
        new_rv = resource_version(obj) or rv
        if kind == "BOOKMARK":
            self._resource_version = new_rv
            return new_rv
        key = cache_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            with self._lock:
                old = self._cache.get(key)
                self._cache[key] = obj
            if old is None:
                self._dispatch("on_add", obj)
            else:
                self._dispatch("on_update", old, obj)
        elif kind == "DELETED":
            with self._lock:
                self._cache.pop(key, None)
            self._dispatch("on_delete", obj)
        else:
            log.warning("watch of %s: unknown event type %r ignored", self.name, kind)
            return rv
        self._resource_version = new_rv
        return new_rv

    def _dispatch(self, method: str, *args: Obj) -> None:
        for handler in self._handlers:
            try:
                getattr(handler, method)(*args)
            except Exception:
                log.exception("informer %s: handler %s failed", self.name, method)

    def _interrupt(self) -> None:
        """Unblock a read of the open watch stream (from another thread)."""
        with self._lock:
            response = self._response
        if response is None:
            return
        try:
            response.shutdown()
        except Exception:
            try:
                response.close()
            except Exception:
                log.debug("closing the watch of %s failed", self.name, exc_info=True)
