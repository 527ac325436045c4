"""Reading the Secrets that resources reference (cluster tokens, registry passwords).

Reads go through a :class:`SecretCache` of the last good answer: while the hub cannot be
reached (transport failure, timeout, 5xx, 429) the cached credentials are used, so a hub outage
does not make every managed cluster look unhealthy. A Secret the hub says is gone (404) is
dropped from the cache and reported. Secret values are never logged.

A managed cluster's TLS is verified (the Secret's ``ca.crt``, else the system trust store)
unless its Secret says ``insecure-skip-tls-verify: "true"``, and its token never travels over
plain ``http://`` unless the Secret says ``insecure-allow-http: "true"`` (docs/security.md,
docs/compatibility.md#c13).
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import threading
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

import attrs

from clusterpulse_core.kube.client import KubeApiError, KubeClient, NotFoundError, hub_unreachable
from clusterpulse_core.names import is_dns1123_label, is_dns1123_subdomain

log = logging.getLogger(__name__)


class CredentialsError(Exception):
    """A referenced Secret is missing, unreadable or lacks a required key; names the Secret."""


#: Secret key (as in a kubeconfig cluster): ``"true"`` turns TLS certificate verification off.
SKIP_TLS_VERIFY_KEY = "insecure-skip-tls-verify"
#: Secret key: ``"true"`` lets the bearer token be sent to an ``http://`` endpoint.
ALLOW_HTTP_KEY = "insecure-allow-http"


class InsecureTransportError(CredentialsError):
    """The token would travel over plain ``http://`` and its Secret does not allow that."""


@attrs.frozen
class TransportWarning:
    """Why a token is not protected by verified TLS: ``reason`` (``PlainHTTP``, ``TLSVerificationSkipped``)."""

    reason: str
    message: str


@attrs.frozen
class ClusterCredentials:
    """How to reach a managed cluster: endpoint, bearer token, CA bundle and the opt-outs of verified TLS.

    ``skip_tls_verify`` and ``allow_http`` come from the Secret's :data:`SKIP_TLS_VERIFY_KEY` and
    :data:`ALLOW_HTTP_KEY`; :attr:`insecure` says what they weakened (the ClusterConnection shows it).
    """

    endpoint: str
    token: str
    ca_pem: str = ""
    skip_tls_verify: bool = False
    allow_http: bool = False
    #: ``namespace/name`` of the Secret (for messages).
    source: str = ""

    @property
    def plain_http(self) -> bool:
        """Whether the endpoint is ``http://``."""
        return urlsplit(self.endpoint).scheme.lower() == "http"

    @property
    def insecure(self) -> TransportWarning | None:
        """Why the token is not protected by verified TLS, or None when it is."""
        where = f" in secret {self.source}" if self.source else ""
        if self.plain_http:
            return TransportWarning(
                "PlainHTTP",
                f"the bearer token is sent over plain http:// to {self.endpoint} ({ALLOW_HTTP_KEY} is set{where})",
            )
        if self.skip_tls_verify:
            return TransportWarning(
                "TLSVerificationSkipped",
                f"TLS certificate verification of {self.endpoint} is off ({SKIP_TLS_VERIFY_KEY} is set{where})",
            )
        return None

    def check_transport(self) -> None:
        """Raise :class:`InsecureTransportError` when the token would go over ``http://`` unallowed."""
        if self.plain_http and not self.allow_http:
            where = f"secret {self.source}" if self.source else "the credentials Secret"
            raise InsecureTransportError(
                f"refusing to send the bearer token over plain http:// to {self.endpoint}: use https://, or set "
                f'{ALLOW_HTTP_KEY}: "true" in {where} (docs/security.md)'
            )


#: The label a credentials Secret must carry (value ``"true"``) when ``require_secret_label`` is on.
CREDENTIALS_LABEL = "clusterpulse.io/credentials"


class PolicyError(CredentialsError):
    """The :class:`CredentialsPolicy` refuses: retrying cannot help until the object or the Secret changes."""


class EndpointNotAllowedError(PolicyError):
    """An endpoint names a host that ``endpoint_allow_list`` does not list."""


class SecretNotLabelledError(PolicyError):
    """A credentials Secret lacks :data:`CREDENTIALS_LABEL` while ``require_secret_label`` is on."""


def check_allow_entry(entry: str) -> None:
    """Raise ``ValueError`` for an allow-list entry that is neither a host, ``*.domain``, an address nor a CIDR."""
    text = entry.strip().lower()
    if ("/" in text and "://" not in text) or _is_address(text):
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError as exc:
            raise ValueError(f"{entry!r} is not a valid IP address or CIDR ({exc})") from exc
        return
    name = text[2:] if text.startswith("*.") else text
    if not is_dns1123_subdomain(name):
        raise ValueError(f"expected a host name, '*.domain', an IP address or a CIDR, got {entry!r}")


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
        return True
    except ValueError:
        return False


@attrs.frozen
class CredentialsPolicy:
    """Who may point the hub where (docs/security.md#who-may-point-the-hub-where).

    ``allowed_endpoints``: host names (exact), ``*.domain`` (any host under it), IP addresses or
    CIDRs an endpoint may name; empty allows any. ``require_label``: a credentials Secret is used
    only when it carries :data:`CREDENTIALS_LABEL` ``"true"``.
    """

    allowed_endpoints: tuple[str, ...] = ()
    require_label: bool = False

    def check_endpoint(self, endpoint: str, field: str = "spec.endpoint") -> None:
        """Raise :class:`EndpointNotAllowedError` naming ``field`` when the endpoint's host is not allowed."""
        if not self.allowed_endpoints:
            return
        text = endpoint.strip()
        host = (urlsplit(text if "://" in text else f"//{text}").hostname or "").lower().rstrip(".")
        if not host or not any(_host_allowed(host, entry) for entry in self.allowed_endpoints):
            raise EndpointNotAllowedError(
                f"{field}: host {host or text!r} is not in clusterpulse.endpoint_allow_list "
                f"({', '.join(self.allowed_endpoints)}); ask an administrator to add it (docs/security.md)"
            )

    def check_secret(self, secret: Mapping[str, object], where: str) -> None:
        """Raise :class:`SecretNotLabelledError` when the Secret must be labelled for use and is not."""
        if not self.require_label:
            return
        meta = secret.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        value = labels.get(CREDENTIALS_LABEL) if isinstance(labels, Mapping) else None
        if str(value or "").lower() != "true":
            raise SecretNotLabelledError(
                f"secret {where} does not carry the label {CREDENTIALS_LABEL}=true, which "
                f"clusterpulse.require_secret_label asks of every credentials Secret (docs/security.md)"
            )


def _host_allowed(host: str, entry: str) -> bool:
    rule = entry.strip().lower().rstrip(".")
    if _is_address(host):
        if "/" not in rule and not _is_address(rule):
            return False
        return ipaddress.ip_address(host.strip("[]")) in ipaddress.ip_network(rule.strip("[]"), strict=False)
    if rule.startswith("*."):
        return host.endswith(rule[1:]) and len(host) > len(rule) - 1
    return host == rule


class SecretCache:
    """The last good read of each Secret, used while the hub is unreachable, and the
    :class:`CredentialsPolicy` every read meets (the runtime's, from the core settings)."""

    def __init__(self, policy: CredentialsPolicy | None = None) -> None:
        self.policy = policy or CredentialsPolicy()
        self._lock = threading.Lock()
        self._data: dict[tuple[str, str], dict[str, str]] = {}
        self._stale: set[tuple[str, str]] = set()

    def put(self, namespace: str, name: str, data: Mapping[str, str]) -> None:
        """Remember a good read."""
        with self._lock:
            self._data[(namespace, name)] = dict(data)
            self._stale.discard((namespace, name))

    def drop(self, namespace: str, name: str) -> None:
        """Forget a Secret (it is gone)."""
        with self._lock:
            self._data.pop((namespace, name), None)
            self._stale.discard((namespace, name))

    def fallback(self, namespace: str, name: str, error: Exception) -> dict[str, str] | None:
        """The cached data while the hub fails with ``error`` (warned once per outage), or None."""
        with self._lock:
            data = self._data.get((namespace, name))
            first = data is not None and (namespace, name) not in self._stale
            if data is not None:
                self._stale.add((namespace, name))
        if first:
            log.warning("hub unreachable reading secret %s/%s (%s): using the last good read", namespace, name, error)
        return dict(data) if data is not None else None


def read_secret(hub: KubeClient, namespace: str, name: str, cache: SecretCache | None = None) -> dict[str, str]:
    """The Secret's ``data`` decoded from base64 (and ``stringData`` if present) as text.

    With a ``cache``, a hub that cannot be reached answers from the last good read. ``name`` must
    be a DNS-1123 subdomain and ``namespace`` a DNS-1123 label (they become a URL path), else
    :class:`CredentialsError` before any request.
    """
    if not is_dns1123_label(namespace):
        raise CredentialsError(f"invalid credentialsRef.namespace {namespace[:100]!r}: not a DNS-1123 label")
    if not is_dns1123_subdomain(name):
        raise CredentialsError(f"invalid credentialsRef.name {name[:100]!r}: not a DNS-1123 subdomain")
    namespace, name = quote(namespace, safe=""), quote(name, safe="")
    try:
        secret = hub.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
    except NotFoundError as exc:
        if cache is not None:
            cache.drop(namespace, name)
        raise CredentialsError(f"failed to get secret: secret {namespace}/{name} not found") from exc
    except KubeApiError as exc:
        cached = cache.fallback(namespace, name, exc) if cache is not None and hub_unreachable(exc) else None
        if cached is not None:
            return cached
        raise CredentialsError(f"failed to get secret: secret {namespace}/{name}: {exc}") from exc
    if cache is not None:
        cache.policy.check_secret(secret, f"{namespace}/{name}")
    data = decode_secret_data(secret)
    if cache is not None:
        cache.put(namespace, name, data)
    return data


def decode_secret_data(secret: Mapping[str, object]) -> dict[str, str]:
    """Decode a Secret object's ``data`` (base64) merged with ``stringData`` (plain)."""
    out: dict[str, str] = {}
    for key, value in dict(secret.get("data") or {}).items():  # type: ignore[call-overload]
        try:
            out[key] = base64.b64decode(str(value)).decode()
        except (ValueError, UnicodeDecodeError):
            out[key] = ""
    for key, value in dict(secret.get("stringData") or {}).items():  # type: ignore[call-overload]
        out[key] = str(value)
    return out


def secret_flag(data: Mapping[str, str], key: str, where: str) -> bool:
    """A ``"true"``/``"false"`` key of a Secret (absent or empty is false); anything else is an error."""
    value = data.get(key, "").strip().lower()
    if value in ("", "false"):
        return False
    if value == "true":
        return True
    raise CredentialsError(f'secret {where}: key {key} must be "true" or "false", got {data[key]!r}')


def cluster_credentials(
    hub: KubeClient, endpoint: str, namespace: str, name: str, cache: SecretCache | None = None
) -> ClusterCredentials:
    """Token (required, key ``token``), CA (optional, key ``ca.crt``) and the TLS opt-outs from a Secret.

    The cache's policy is met first: the endpoint's host allowed, the Secret labelled if asked.
    The token is refused for an ``http://`` endpoint unless the Secret allows it
    (:class:`InsecureTransportError`).
    """
    if cache is not None:
        cache.policy.check_endpoint(endpoint)
    data = read_secret(hub, namespace, name, cache)
    where = f"{namespace}/{name}"
    token = data.get("token", "")
    if not token:
        raise CredentialsError(f"no token found in secret {where}")
    credentials = ClusterCredentials(
        endpoint=endpoint,
        token=token,
        ca_pem=data.get("ca.crt", ""),
        skip_tls_verify=secret_flag(data, SKIP_TLS_VERIFY_KEY, where),
        allow_http=secret_flag(data, ALLOW_HTTP_KEY, where),
        source=where,
    )
    credentials.check_transport()
    return credentials
