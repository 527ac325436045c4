"""A Docker Registry HTTP API v2 client: the ``/v2/`` health check and the catalog
(docs/compatibility.md#registry-checks).

One :class:`RegistryClient` (one ``requests`` session, so one connection pool) serves one
registry for as long as its connection settings stay the same.

A registry is not trusted (docs/security.md#registries): every answer is read up to
:data:`MAX_RESPONSE_BYTES` after decompression, a redirect is followed only within the origin it
was asked of, catalog pages only within the registry's origin, and a Bearer ``realm`` must be
``https://`` unless the registry is declared ``insecure``. The credentials go to the registry's origin
and to a token service there or on a host ``token_realm_hosts`` lists, nowhere else; an anonymous
registry's token service may be anywhere (it gets no credentials).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import attrs
import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import InsecureRequestWarning

from clusterpulse_core import deadline as core_deadline
from clusterpulse_core import serde
from clusterpulse_core.httpbody import BodyTooLargeError, read_capped
from clusterpulse_registry.auth import (
    BearerChallenge,
    Credentials,
    TokenCache,
    parse_bearer_challenge,
    parse_token_response,
)
from clusterpulse_registry.detect import detect_headers
from clusterpulse_registry.endpoint import basic_auth_header, catalog_url
from clusterpulse_registry.result import MAX_LISTED_REPOSITORIES, HealthCheckResult
from clusterpulse_registry.transport import describe_failure, failure_kind

Log = logging.Logger | logging.LoggerAdapter

#: Idle connections kept per registry (docs/compatibility.md#registry-checks: max 10 idle connections).
POOL_SIZE = 10
#: Catalog pages followed at most through ``Link`` headers.
MAX_CATALOG_PAGES = 50
#: The error code of a registry refusing the requested page size.
PAGE_SIZE_REFUSED = "PAGINATION_NUMBER_INVALID"
#: Characters of an error body quoted in a message.
BODY_EXCERPT = 200
#: Largest answer read from a registry or its token service, after decompression (a catalog page
#: of the default 100 entries is a few KiB; 1,000 names of the longest kind fit in 0.3 MiB).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: Redirects followed at most for one request (each within the same origin).
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}


class RefusedError(requests.exceptions.RequestException):
    """A request the client would not complete: a redirect to another origin, an answer over the
    byte cap."""


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the default port spelled out), lower-cased."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{scheme}://{(parts.hostname or '').lower()}:{port or _DEFAULT_PORTS.get(scheme, 0)}"


class CatalogError(Exception):
    """The catalog could not be read (``catalog request returned <code>: <body>`` and friends)."""


class TokenError(Exception):
    """The token endpoint refused or failed; ``status`` is its HTTP status (0: no answer)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class RealmRefusedError(TokenError):
    """A token realm the credentials may not go to (not ``https://``, or another origin not allowed);
    nothing was sent to it."""

    def __init__(self, message: str) -> None:
        super().__init__(0, message)


class Deadline:
    """The time left for one whole check; every request gets at most what remains."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; raises ``requests.Timeout`` once the check's time is used up."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise requests.exceptions.Timeout(f"check timed out after {self.seconds:g}s")
        return left


@attrs.frozen
class Reply:
    """A registry's answer, its body read within the byte cap."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def text(self) -> str:
        """The body as text (undecodable bytes replaced)."""
        return self.content.decode("utf-8", "replace")


@attrs.frozen
class Exchange:
    """The final response of a request plus what the authentication dance went through."""

    response: Reply
    challenged: bool = False
    bearer: bool = False
    token_error: TokenError | None = None


@attrs.frozen
class CatalogPage:
    """One ``/v2/_catalog`` answer."""

    repositories: tuple[str, ...] = ()


def _quiet_insecure_warning() -> None:
    """skipTLSVerify is the user's explicit choice, logged once per client; skip urllib3's per-request warning."""
    warnings.filterwarnings("ignore", message="Unverified HTTPS request", category=InsecureRequestWarning)


def next_link(link_header: str | None, current_url: str) -> str | None:
    """The absolute URL of the ``rel="next"`` entry of a ``Link`` header, or ``None``."""
    if not link_header:
        return None
    for part in link_header.split(","):
        target, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", "") or "rel=next" in params.replace(" ", ""):
            return urljoin(current_url, target.strip().strip("<>"))
    return None


class RegistryClient:
    """Talks to one registry at ``base_url`` (already normalised)."""

    def __init__(
        self,
        base_url: str,
        verify: bool = True,
        credentials: Credentials | None = None,
        insecure: bool = False,
        realm_hosts: frozenset[str] = frozenset(),
    ) -> None:
        self.base_url = base_url
        self.origin = origin(base_url)
        self.credentials = credentials or Credentials()
        #: The registry is declared plain HTTP (``spec.insecure``): an ``http://`` token realm is accepted.
        self.insecure = insecure
        #: Hosts (lower-case) besides the registry's origin whose token realm gets the credentials.
        self.realm_hosts = realm_hosts
        # Passed on every request: a session-level ``verify=False`` loses to $REQUESTS_CA_BUNDLE.
        self.verify = verify
        self.session = requests.Session()
        self.session.headers.update({"Accept": "application/json", "Accept-Encoding": "identity"})
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=POOL_SIZE, max_retries=0)
        self.session.mount("https://", adapter)
        self.session.mount("http://", adapter)
        # Each request's wall clock (connect, headers and body) is cut off by the core's watchdog.
        core_deadline.watch_pool(adapter.poolmanager)
        if not verify:
            _quiet_insecure_warning()
        self._tokens = TokenCache()
        self._challenges: dict[str, BearerChallenge] = {}

    def close(self) -> None:
        """Close the connection pool."""
        self.session.close()

    # ------------------------------------------------------------------ requests

    def _basic_headers(self) -> dict[str, str]:
        header = basic_auth_header(self.credentials.username, self.credentials.password)
        return {"Authorization": header} if header else {}

    def _realm_headers(self, realm: str) -> dict[str, str]:
        """The headers of a token request to ``realm``; :class:`RealmRefusedError` when it may not have them.

        The realm must be ``https://`` (``http://`` only for a registry declared insecure). The Basic
        credentials go only to the registry's own origin or to a host ``token_realm_hosts`` lists;
        without credentials any such realm is asked for an anonymous token (nothing to leak).
        """
        parts = urlsplit(realm)
        scheme = parts.scheme.lower()
        if scheme == "http" and not self.insecure:
            raise RealmRefusedError(
                f"token realm {realm} refused: not https:// (the credentials would travel in "
                f"clear; spec.insecure allows it for a plain-HTTP registry)"
            )
        if scheme not in ("https", "http"):
            raise RealmRefusedError(f"token realm {realm!r} refused: not an https:// URL")
        basic = self._basic_headers()
        host = (parts.hostname or "").lower()
        if not basic or origin(realm) == self.origin or host in self.realm_hosts:
            return basic
        raise RealmRefusedError(
            f"token realm {realm} refused: host {host} is not the registry's origin {self.origin}, and "
            f"plugins.registry.token_realm_hosts does not list it (the credentials would go there; "
            f'Docker Hub needs token_realm_hosts = ["auth.docker.io"])'
        )

    def _fetch_token(self, challenge: BearerChallenge, deadline: Deadline) -> str:
        params = {key: value for key, value in (("service", challenge.service), ("scope", challenge.scope)) if value}
        headers = self._realm_headers(challenge.realm)
        try:
            response = self._send(challenge.realm, deadline, params=params, headers=headers)
        except requests.RequestException as exc:
            raise TokenError(0, describe_failure(exc, challenge.realm, deadline.seconds)) from exc
        if response.status_code != 200:
            raise TokenError(response.status_code, f"token endpoint {challenge.realm} returned {response.status_code}")
        try:
            token = parse_token_response(response.content)
        except ValueError as exc:
            raise TokenError(response.status_code, f"token endpoint {challenge.realm}: {exc}") from exc
        self._tokens.put(challenge, token.value, token.expires_in)
        return token.value

    def _send(
        self,
        url: str,
        deadline: Deadline,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """One GET within what is left of ``deadline``, wall clock (a dripping registry is cut off).

        Redirects are followed only within ``url``'s origin (so the headers, credentials included,
        never reach another host), at most :data:`MAX_REDIRECTS`; the body is read up to
        :data:`MAX_RESPONSE_BYTES` after decompression. :class:`RefusedError` otherwise.
        """
        allowed = origin(url)
        for _ in range(MAX_REDIRECTS + 1):
            left = deadline.remaining()
            try:
                with core_deadline.guard(left, f"GET {url}"):
                    response = self.session.get(
                        url,
                        timeout=left,
                        verify=self.verify,
                        params=params,
                        headers=headers,
                        allow_redirects=False,
                        stream=True,
                    )
                    try:
                        location = response.headers.get("Location")
                        if response.status_code in _REDIRECTS and location:
                            target = urljoin(response.url, location)
                        else:
                            body = read_capped(response.raw, MAX_RESPONSE_BYTES, f"GET {url}")
                            return Reply(response.status_code, response.headers, body)
                    finally:
                        response.close()
            except core_deadline.DeadlineExceeded as exc:
                raise requests.exceptions.Timeout(f"check timed out after {deadline.seconds:g}s") from exc
            except BodyTooLargeError as exc:
                raise RefusedError(str(exc)) from exc
            if origin(target) != allowed:
                raise RefusedError(f"redirect to {target} refused: not {allowed}, where the request went")
            url, params = target, None
        raise RefusedError(f"more than {MAX_REDIRECTS} redirects")

    def get(self, url: str, deadline: Deadline) -> Exchange:
        """GET ``url``, answering a Bearer challenge once with a (cached or fresh) token.

        Raises ``requests.RequestException`` when the registry cannot be reached.
        """
        path = urlsplit(url).path
        challenge = self._challenges.get(path)
        token = self._tokens.get(challenge) if challenge is not None else None
        challenged = fresh = False
        while True:
            headers = {"Authorization": f"Bearer {token}"} if token else self._basic_headers()
            response = self._send(url, deadline, headers=headers)
            if response.status_code != 401:
                return Exchange(response, challenged, bearer=token is not None)
            challenged = True
            challenge = parse_bearer_challenge(response.headers.get("WWW-Authenticate", ""))
            if challenge is None or fresh:
                return Exchange(response, challenged, bearer=token is not None)
            self._challenges[path] = challenge
            self._tokens.drop(challenge)
            try:
                token = self._fetch_token(challenge, deadline)
            except TokenError as exc:
                return Exchange(response, challenged, bearer=False, token_error=exc)
            fresh = True

    # ------------------------------------------------------------------ checks

    def health_check(self, deadline: Deadline, log: Log) -> HealthCheckResult:
        """``GET /v2/``: available on 200, or on 401 when no credentials were configured."""
        url = f"{self.base_url}/v2/"
        started = time.perf_counter()
        try:
            exchange = self.get(url, deadline)
        except requests.RequestException as exc:
            elapsed = int((time.perf_counter() - started) * 1000)
            detail = describe_failure(exc, url, deadline.seconds)
            log.warning("%s", self._transport_advice(failure_kind(exc), detail, deadline.seconds))
            return HealthCheckResult(available=False, response_time_ms=elapsed, error=f"request failed: {detail}")
        elapsed = int((time.perf_counter() - started) * 1000)
        status = exchange.response.status_code
        if status == 200 or (status == 401 and not self.credentials.complete):
            facts = detect_headers(exchange.response.headers)
            features = dict(facts.features)
            if exchange.challenged or exchange.bearer:
                features["requires_auth"] = True
            if status == 401:
                log.debug(
                    "401 from /v2/ without credentials: the registry requires authentication "
                    "(spec.credentialsRef names a Secret with username and password)"
                )
            return HealthCheckResult(available=True, response_time_ms=elapsed, version=facts.version, features=features)
        error = f"unexpected status code: {status}"
        if isinstance(exchange.token_error, RealmRefusedError):
            log.warning("401 from /v2/ and no token: %s", exchange.token_error)
            error = f"{error}: {exchange.token_error}"
        elif status == 401 and exchange.token_error is not None and exchange.token_error.status == 0:
            log.warning("401 from /v2/ and no token: %s", exchange.token_error)
        elif status == 401:
            reason = f" ({exchange.token_error})" if exchange.token_error else ""
            log.warning("401 from /v2/%s: check the credentials in %s", reason, self.credentials.source)
        else:
            log.warning("unexpected status %d from %s: is spec.endpoint the registry's base URL?", status, url)
        return HealthCheckResult(available=False, response_time_ms=elapsed, error=error)

    def _transport_advice(self, kind: str, detail: str, timeout: float) -> str:
        if kind == "tls":
            return (
                f"{detail}: trust the registry's CA (REQUESTS_CA_BUNDLE) or set spec.skipTLSVerify "
                f"(for plain HTTP use an http:// endpoint or spec.insecure)"
            )
        if kind == "timeout":
            return f"{detail}: no answer within {timeout:g}s; check the registry or raise spec.monitoring.timeout"
        if kind in ("refused", "dns"):
            return f"{detail}: cannot reach the registry; check spec.endpoint and the network path"
        return f"{detail}: request failed"

    def catalog(self, max_entries: int, deadline: Deadline) -> list[str]:
        """Repository names from ``/v2/_catalog`` (``n=max_entries``), following ``Link`` pages up to the limit.

        A registry that caps its page size below ``n`` (distribution's ``catalog.maxentries``)
        refuses ``n`` with ``PAGINATION_NUMBER_INVALID``; the catalog is then read in the
        registry's own page size.
        """
        url: str | None = catalog_url(self.base_url, max_entries)
        names: list[str] = []
        for _ in range(MAX_CATALOG_PAGES):
            if url is None or (max_entries > 0 and len(names) >= max_entries):
                break
            response = self.get(url, deadline).response
            if response.status_code == 400 and PAGE_SIZE_REFUSED in response.text and not names:
                unsized = _without_page_size(url)
                if unsized is not None:
                    url = unsized
                    continue
            if response.status_code != 200:
                body = response.text.strip()[:BODY_EXCERPT]
                raise CatalogError(f"catalog request returned {response.status_code}: {body}")
            names.extend(_decode_catalog(response.content).repositories)
            url = next_link(response.headers.get("Link"), url)
            if url is not None and origin(url) != self.origin:
                raise CatalogError(f"catalog page link to {url} refused: not the registry's origin {self.origin}")
        return names[:max_entries] if max_entries > 0 else names

    def extended_health_check(
        self, check_catalog: bool, max_entries: int, timeout: float, log: Log
    ) -> HealthCheckResult:
        """The health check, then (when asked and available) the catalog, within ``timeout`` seconds."""
        deadline = Deadline(timeout)
        result = self.health_check(deadline, log)
        if not result.available or not check_catalog:
            return result
        features = dict(result.features)
        try:
            names = self.catalog(max_entries, deadline)
        except (CatalogError, requests.RequestException) as exc:
            detail = (
                describe_failure(exc, catalog_url(self.base_url, max_entries))
                if isinstance(exc, requests.RequestException)
                else str(exc)
            )
            log.warning(
                "catalog not readable (%s): the account may lack catalog access; "
                "set spec.monitoring.checkCatalog to false to stop checking it",
                detail,
            )
            features["catalog_accessible"] = False
            return attrs.evolve(result, features=features)
        features["catalog_accessible"] = True
        listed = tuple(names) if len(names) <= MAX_LISTED_REPOSITORIES else ()
        return attrs.evolve(result, features=features, repository_count=len(names), repositories=listed)


def _without_page_size(url: str) -> str | None:
    """``url`` without its ``n`` query parameter; ``None`` when it had none (nothing left to try)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "n"]
    if len(query) == len(parse_qsl(parts.query, keep_blank_values=True)):
        return None
    return urlunsplit(parts._replace(query=urlencode(query)))


def _decode_catalog(body: bytes) -> CatalogPage:
    try:
        data: Any = serde.loads(body)
        return serde.structure(data if isinstance(data, dict) else {}, CatalogPage)
    except Exception as exc:
        raise CatalogError(f"catalog response is not valid JSON: {exc}") from exc
