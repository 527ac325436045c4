"""A thin raw-JSON client over the ``kubernetes`` package's public configuration.

Hot paths never build the ``kubernetes`` model classes: responses are decoded with msgspec
straight from the bytes, lists are paginated with ``limit``/``continue``, and every call
has a wall-clock deadline covering connect, headers and body (:mod:`clusterpulse_core.deadline`)
and a maximum response size. A managed cluster's client routes every call through its circuit
breaker.

The ``ApiClient`` is used through its public API only: its ``Configuration`` (host, TLS,
proxy, credentials) and ``param_serialize`` (URL, default headers and the bearer token, refreshed
by the configuration's hook). The calls themselves go through the client's own urllib3 pool
(:func:`pool_manager`), built from that configuration, whose connections the deadline watchdog
can cut: a socket timeout alone does not bound a server dripping its headers.
"""

from __future__ import annotations

import gc
import ipaddress
import ssl
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import attrs
import msgspec
import urllib3
from kubernetes.client import ApiClient, Configuration
from urllib3.exceptions import HTTPError

from clusterpulse_core import deadline
from clusterpulse_core.breaker import CircuitBreaker
from clusterpulse_core.httpbody import BodyTooLargeError, read_capped

P = TypeVar("P")
T = TypeVar("T")

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class KubeApiError(Exception):
    """An API call failed: ``status`` is the HTTP status (0 for a transport failure)."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        self.status = status
        self.reason = reason
        super().__init__(message)


class NotFoundError(KubeApiError):
    """404: the object or the resource type does not exist."""


class ConflictError(KubeApiError):
    """409: stale resourceVersion or the object already exists."""


class GoneError(KubeApiError):
    """410: the resourceVersion is too old (relist)."""


class ResponseTooLargeError(KubeApiError):
    """The response body is larger than the client's ``max_bytes`` (status 0: a hostile or broken server)."""


class CallDeadlineError(KubeApiError):
    """The call ran past its wall-clock deadline (status 0, counted by the breaker)."""


def hub_unreachable(exc: KubeApiError) -> bool:
    """Whether ``exc`` says the server could not be reached or could not answer now (a transport
    failure or deadline, 429, 5xx), as opposed to an answer about the request (404, 409, 422, ...)."""
    return exc.status == 0 or exc.status == 429 or exc.status >= 500


#: Fewest idle connections a client's pool keeps per host (see :func:`pool_manager`).
MIN_POOL_CONNECTIONS = 64

#: Default maximum size of one response body (one page of a list), bytes.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024

_BY_STATUS: dict[int, type[KubeApiError]] = {404: NotFoundError, 409: ConflictError, 410: GoneError}
#: Statuses that are the API server's answer about an object, not a failure of the cluster: they
#: are raised to the caller but do not count toward the circuit breaker (an optional API such as
#: OLM or OpenShift's ClusterVersion answers 404 on most clusters).
_ANSWERS = frozenset({404, 409, 410, 422})


def api_error(status: int, body: bytes | str | None, fallback: str = "") -> KubeApiError:
    """Build the error for an HTTP status, using the ``Status`` body's message when there is one."""
    message, reason = fallback, ""
    if body:
        try:
            decoded = _decoder.decode(body)
            if isinstance(decoded, dict):
                message = str(decoded.get("message") or message)
                reason = str(decoded.get("reason") or "")
        except msgspec.DecodeError:
            message = (body.decode(errors="replace") if isinstance(body, bytes) else body)[:200] or message
    if not message:
        message = f"HTTP {status}"
    return _BY_STATUS.get(status, KubeApiError)(status, message, reason)


@contextmanager
def no_gc() -> Iterator[None]:
    """Keep the cyclic garbage collector out of a big decode or page of records.

    Decoded JSON holds no reference cycles, and every collection during the decode would
    rescan all the objects made so far (quadratic on big lists).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode(data: bytes) -> Any:
    """Decode one JSON response body."""
    with no_gc():
        return _decoder.decode(data)


def make_api_client(host: str, token: str = "", ca_pem: str = "", verify: bool = True) -> ApiClient:
    """An ApiClient for ``host`` with a bearer token.

    TLS is verified against ``ca_pem`` when given, else against the system trust store;
    ``verify=False`` (an explicit opt-out, docs/security.md) turns verification off.
    """
    config = Configuration()
    config.host = host.rstrip("/")
    config.retries = False
    if token:
        config.api_key = {"BearerToken": token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
    config.verify_ssl = verify
    if verify and ca_pem:
        config.ca_cert_data = ca_pem
    return ApiClient(config)


def pool_manager(configuration: Configuration) -> urllib3.PoolManager:
    """One urllib3 pool for the API server of ``configuration``, its calls cut by the watchdog.

    Built from the public settings of the ``kubernetes`` ``Configuration``, as the client's own
    REST layer reads them: TLS verification (``verify_ssl``, ``ssl_ca_cert``/``ca_cert_data``,
    ``assert_hostname``, ``tls_server_name``), the client certificate (``cert_file``,
    ``key_file``), ``socket_options``, ``connection_pool_maxsize`` and an HTTP(S) ``proxy``
    (``proxy_headers``, ``proxy_ssl_context``; ``no_proxy`` honoured). A SOCKS proxy is refused
    by urllib3 with a clear error rather than bypassed.
    """
    kwargs: dict[str, Any] = {
        "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
        "ca_certs": configuration.ssl_ca_cert,
        "ca_cert_data": configuration.ca_cert_data,
        "cert_file": configuration.cert_file,
        "key_file": configuration.key_file,
    }
    if configuration.assert_hostname is not None:
        kwargs["assert_hostname"] = configuration.assert_hostname
    if configuration.tls_server_name:
        kwargs["server_hostname"] = configuration.tls_server_name
    if configuration.socket_options is not None:
        kwargs["socket_options"] = configuration.socket_options
    # The kubernetes default (5 per CPU) is below the callers one hub client serves at once (every
    # kind's workers, the informers, the Leases): urllib3 then discards connections with a warning
    # and the next calls pay a new TLS handshake. Idle connections kept, not a cap on calls.
    kwargs["maxsize"] = max(configuration.connection_pool_maxsize or 0, MIN_POOL_CONNECTIONS)
    manager: urllib3.PoolManager
    if configuration.proxy and not _bypasses_proxy(str(configuration.host), configuration.no_proxy or ""):
        manager = urllib3.ProxyManager(
            configuration.proxy,
            proxy_headers=configuration.proxy_headers,
            proxy_ssl_context=configuration.proxy_ssl_context,
            **kwargs,
        )
    else:
        manager = urllib3.PoolManager(**kwargs)
    deadline.watch_pool(manager)
    return manager


def _bypasses_proxy(url: str, no_proxy: str) -> bool:
    """Whether ``url``'s host matches a ``no_proxy`` rule: ``*``, a domain (and its subdomains),
    ``host:port`` or an IP network, as the ``kubernetes`` client reads it."""
    parsed = urllib3.util.parse_url(url)
    host = (parsed.host or "").strip("[]").lower()
    host_port = f"{host}:{parsed.port}" if parsed.port else host
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in (rule.strip().lower() for rule in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
        entry = entry.lstrip(".")
        if entry in (host, host_port) or host.endswith("." + entry) or host_port.endswith("." + entry):
            return True
    return False


class KubeClient:
    """Raw-JSON access to one API server (the hub or a managed cluster).

    ``timeout`` is each call's wall-clock limit (connect, headers and body together), capped by
    the deadline in force (:func:`clusterpulse_core.deadline.within`); ``max_bytes`` caps one
    response body. Watches (``stream=True``) are long-lived and bounded by the informer instead.
    The calls go through one pool per client (:func:`pool_manager`), built from
    ``api_client.configuration``.
    """

    def __init__(
        self,
        api_client: ApiClient,
        name: str = "hub",
        timeout: float = 30.0,
        breaker: CircuitBreaker | None = None,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.api_client = api_client
        self.name = name
        self.timeout = timeout
        self.breaker = breaker
        self.max_bytes = max_bytes
        self.pool = pool_manager(api_client.configuration)

    @property
    def host(self) -> str:
        """The API server URL."""
        return str(self.api_client.configuration.host)

    def close(self) -> None:
        """Close the connection pool."""
        self.pool.clear()
        self.api_client.close()

    # ------------------------------------------------------------------ raw calls

    def raw(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        stream: bool = False,
    ) -> Any:
        """One HTTP call, through the breaker when there is one: the urllib3 response object.

        Non-2xx answers raise :class:`KubeApiError`; transport failures raise it with status 0.
        """
        if self.breaker is None:
            return self._call(method, path, query, body, content_type, timeout, stream)

        def call() -> Any:
            try:
                return self._call(method, path, query, body, content_type, timeout, stream)
            except KubeApiError as exc:
                if exc.status in _ANSWERS:
                    # Handed back through the breaker's frame without its traceback: a traceback
                    # holding frames that (through their callers) hold the error is a reference
                    # cycle, and it would keep every caller's frame, a whole reconcile's data,
                    # alive until the cyclic collector runs. A 404 of an optional API is routine.
                    return exc.with_traceback(None)
                raise

        result = self.breaker.call(call)
        if not isinstance(result, KubeApiError):
            return result
        try:
            raise result
        finally:
            del result  # the same cycle, through this frame (in the raised error's traceback)

    def _call(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float | None,
        stream: bool,
    ) -> Any:
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        _method, url, header_params, _body, _post = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            query_params=params,
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        payload = None if body is None else _encoder.encode(body)
        if stream:
            request_timeout = timeout if timeout is not None else self.timeout
            # Connect within the timeout; the read timeout must outlive the server's watch timeout.
            try:
                response = self.pool.request(
                    method,
                    url,
                    body=payload,
                    headers=header_params,
                    timeout=_timeout((min(request_timeout, 10.0), request_timeout)),
                    preload_content=False,
                    retries=False,
                )
            except HTTPError as exc:
                raise KubeApiError(0, f"{method} {path}: {exc}") from exc
            if not 200 <= response.status <= 299:
                raise api_error(response.status, response.read(), f"{method} {path}: HTTP {response.status}")
            return response
        try:
            limit = deadline.budget(timeout if timeout is not None else self.timeout)
        except deadline.DeadlineExceeded as exc:
            raise CallDeadlineError(0, f"{method} {path}: {exc}") from exc
        try:
            with deadline.guard(limit, f"{method} {path}"):
                response = self.pool.request(
                    method,
                    url,
                    body=payload,
                    headers=header_params,
                    timeout=_timeout(limit),
                    preload_content=False,
                    retries=False,
                )
                data = _read_body(response, self.max_bytes, f"{method} {path}")
        except deadline.DeadlineExceeded as exc:
            raise CallDeadlineError(0, str(exc)) from exc
        except HTTPError as exc:
            raise KubeApiError(0, f"{method} {path}: {exc}") from exc
        if not 200 <= response.status <= 299:
            raise api_error(response.status, data, f"{method} {path}: HTTP {response.status}")
        return _Body(response.status, data)

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Any:
        """One call, decoded JSON body returned."""
        response = self.raw(method, path, query, body, content_type, timeout)
        if not response.data:
            return None
        try:
            return decode(response.data)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise KubeApiError(0, f"{method} {path}: the response is not acceptable JSON: {exc}") from exc

    def get(self, path: str, timeout: float | None = None, **query: Any) -> Any:
        """GET ``path`` and return the decoded body."""
        return self.request("GET", path, query, timeout=timeout)

    def get_bytes(self, path: str, timeout: float | None = None, **query: Any) -> bytes:
        """GET ``path`` and return the raw body (for typed partial decoding)."""
        data: bytes = self.raw("GET", path, query, timeout=timeout).data
        return data

    def list_pages(self, path: str, limit: int = 500, timeout: float | None = None, **query: Any) -> Iterator[bytes]:
        """The raw bodies of a paginated list, one page at a time (memory bounded by ``limit``)."""
        token: str | None = None
        while True:
            page_query = dict(query, limit=limit or None)
            if token:
                page_query["continue"] = token
            body = self.get_bytes(path, timeout=timeout, **page_query)
            yield body
            token = _continue_token(body)
            if not token:
                return

    def list_decoded(
        self, path: str, decoder: Callable[[bytes], P], limit: int = 500, timeout: float | None = None, **query: Any
    ) -> Iterator[P]:
        """A paginated list, each page decoded once by ``decoder``.

        The continue token is read from the decoded page (``metadata.continue`` of a dict, or
        ``metadata.continue_`` of a typed page such as one with a ``_ListMeta``-like field), so
        no page is parsed twice. A typed page without list metadata ends the listing after
        its first page: give typed decoders a ``metadata`` field.
        """
        token: str | None = None
        while True:
            page_query = dict(query, limit=limit or None)
            if token:
                page_query["continue"] = token
            page = decoder(self.get_bytes(path, timeout=timeout, **page_query))
            yield page
            token = continue_of(page)
            if not token:
                return

    def list_items(
        self, path: str, limit: int = 500, timeout: float | None = None, **query: Any
    ) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, decoded page by page."""
        for page in self.list_decoded(path, decode, limit, timeout, **query):
            yield from page.get("items") or ()

    def count(self, path: str, timeout: float | None = None, page_size: int = 500, **query: Any) -> int:
        """How many objects a list holds, without decoding them.

        One ``limit=1`` call: its item plus the server's ``remainingItemCount``. A server that
        does not report the remainder (or a selector, which disables it) is paged through, the
        items only counted.
        """
        body = self.get_bytes(path, timeout=timeout, **dict(query, limit=1))
        page = _counted_page.decode(body)
        found = len(page.items or ())
        token = page.metadata.continue_
        if not token:
            return found
        if page.metadata.remaining_item_count is not None:
            return found + page.metadata.remaining_item_count
        while token:
            body = self.get_bytes(path, timeout=timeout, **dict(query, limit=page_size, **{"continue": token}))
            page = _counted_page.decode(body)
            found += len(page.items or ())
            token = page.metadata.continue_
        return found

    def list_capped(
        self,
        path: str,
        decode_item: Callable[[Any], T],
        cap: int,
        limit: int = 500,
        timeout: float | None = None,
        **query: Any,
    ) -> CappedList[T]:
        """The first ``cap`` items of a paginated list, each decoded by ``decode_item`` (given the
        item's JSON as a buffer); the others only counted.

        Pages ask for no more than the items still wanted, and each item is decoded alone, so a
        server that ignores ``limit`` (or a list far over the cap) never costs more than ``cap``
        decoded objects: the items past the cap stay undecoded slices of their page. Once the
        cap is reached, the rest of the list is counted from the server's
        ``remainingItemCount``, else by paging through it (see :meth:`count`).
        """
        items: list[T] = []
        total = 0
        token = ""
        while True:
            wanted = max(1, min(limit or cap, cap - len(items))) if len(items) < cap else limit
            page_query = dict(query, limit=wanted or None)
            if token:
                page_query["continue"] = token
            page = _raw_page.decode(self.get_bytes(path, timeout=timeout, **page_query))
            raw = page.items or ()
            total += len(raw)
            for item in raw[: max(0, cap - len(items))]:
                items.append(decode_item(item))
            token = page.metadata.continue_
            if not token:
                return CappedList(items, total)
            if len(items) >= cap and page.metadata.remaining_item_count is not None:
                return CappedList(items, total + page.metadata.remaining_item_count)

    def merge_patch(self, path: str, patch: Mapping[str, Any], timeout: float | None = None) -> Any:
        """``PATCH`` with ``application/merge-patch+json``."""
        return self.request(
            "PATCH", path, body=dict(patch), content_type="application/merge-patch+json", timeout=timeout
        )


@attrs.frozen
class CappedList(Generic[T]):
    """What :meth:`KubeClient.list_capped` read: the kept items and how many the list held."""

    items: list[T]
    #: Items in the list, kept or not.
    total: int

    @property
    def skipped(self) -> int:
        """Items of the list that were not kept."""
        return max(0, self.total - len(self.items))


class _Body:
    """A finished response: status and the whole body (read within the deadline and size limit)."""

    __slots__ = ("data", "status")

    def __init__(self, status: int, data: bytes) -> None:
        self.status = status
        self.data = data


def _read_body(response: Any, max_bytes: int, what: str) -> bytes:
    """The body, failing as soon as it exceeds ``max_bytes`` after decompression (Content-Length first)."""
    try:
        return read_capped(response, max_bytes, what)
    except BodyTooLargeError as exc:
        raise ResponseTooLargeError(0, str(exc)) from exc


class _ListMeta(msgspec.Struct):
    continue_: str = msgspec.field(default="", name="continue")


class _ListHead(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


_list_head = msgspec.json.Decoder(_ListHead)


class _Skipped(msgspec.Struct):
    """Any object, its content skipped by the decoder."""


class _CountedMeta(msgspec.Struct, rename="camel"):
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class _CountedPage(msgspec.Struct):
    items: list[_Skipped] | None = None
    metadata: _CountedMeta = msgspec.field(default_factory=_CountedMeta)


_counted_page = msgspec.json.Decoder(_CountedPage)


class _RawPage(msgspec.Struct):
    items: list[msgspec.Raw] | None = None
    metadata: _CountedMeta = msgspec.field(default_factory=_CountedMeta)


_raw_page = msgspec.json.Decoder(_RawPage)


def _continue_token(body: bytes) -> str:
    return _list_head.decode(body).metadata.continue_


def continue_of(page: Any) -> str:
    """``metadata.continue`` of a decoded list page: a dict, or a struct with ``metadata.continue_``."""
    if isinstance(page, dict):
        meta = page.get("metadata")
        token = meta.get("continue") if isinstance(meta, dict) else None
        return token if isinstance(token, str) else ""
    token = getattr(getattr(page, "metadata", None), "continue_", "")
    return token if isinstance(token, str) else ""


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _timeout(value: Any) -> Any:
    if isinstance(value, tuple):
        return urllib3.Timeout(connect=value[0], read=value[1])
    return urllib3.Timeout(total=value)
