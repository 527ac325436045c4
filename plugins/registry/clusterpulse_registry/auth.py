"""Registry authentication: credentials, the Bearer token challenge and the token cache.

Registries that delegate authentication (Docker Hub, Harbor, GHCR, Quay, a distribution
registry with ``auth: token``) answer ``401`` with
``WWW-Authenticate: Bearer realm="...",service="...",scope="..."``. The client then asks the
realm for a token (``GET realm?service=...&scope=...``, with Basic credentials when it has
them) and repeats the request with ``Authorization: Bearer <token>``. Tokens are kept until
they expire, per realm, service and scope.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

import attrs

from clusterpulse_core import serde
from clusterpulse_core.serde import wire

#: Token lifetime when the token endpoint does not say (Docker token specification).
DEFAULT_TOKEN_SECONDS = 60
#: A token is renewed this many seconds before it expires.
EXPIRY_MARGIN_SECONDS = 5

_PARAM = re.compile(r'([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))')
_BEARER = re.compile(r"(?:^|[\s,])Bearer\s+", re.IGNORECASE)


@attrs.frozen(repr=False)
class Credentials:
    """Username and password for a registry; ``source`` names where they came from, for log lines."""

    username: str = ""
    password: str = ""
    source: str = ""

    @property
    def complete(self) -> bool:
        """Both parts are set (only then are they sent, docs/compatibility.md#registry-checks)."""
        return bool(self.username and self.password)

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, source={self.source!r})"


@attrs.frozen
class BearerChallenge:
    """The parameters of a ``WWW-Authenticate: Bearer`` challenge."""

    realm: str
    service: str = ""
    scope: str = ""


def parse_bearer_challenge(header: str) -> BearerChallenge | None:
    """The Bearer challenge in a ``WWW-Authenticate`` value, or ``None`` (Basic, or no realm)."""
    match = _BEARER.search(header)
    if match is None:
        return None
    params: dict[str, str] = {}
    for param in _PARAM.finditer(header, match.end()):
        quoted, bare = param.group(2), param.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        params.setdefault(param.group(1).lower(), value)
    realm = params.get("realm", "")
    if not realm:
        return None
    return BearerChallenge(realm, params.get("service", ""), params.get("scope", ""))


@wire(omit_empty=("token", "access_token", "expires_in"))
@attrs.frozen
class TokenResponse:
    """The token endpoint's answer; ``token`` and ``access_token`` are synonyms."""

    token: str = ""
    access_token: str = ""
    expires_in: int = 0

    @property
    def value(self) -> str:
        """The token to send."""
        return self.token or self.access_token


def parse_token_response(body: bytes) -> TokenResponse:
    """Decode a token endpoint answer; raise ValueError when it holds no token."""
    try:
        data = serde.loads(body)
        response = serde.structure(data if isinstance(data, dict) else {}, TokenResponse)
    except Exception as exc:
        raise ValueError(f"token response is not valid JSON: {exc}") from exc
    if not response.value:
        raise ValueError("token response holds no token")
    return response


class TokenCache:
    """Bearer tokens per challenge, kept until shortly before they expire (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tokens: dict[BearerChallenge, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, challenge: BearerChallenge) -> str | None:
        """A token for ``challenge`` that has not expired, or ``None``."""
        with self._lock:
            entry = self._tokens.get(challenge)
            if entry is None:
                return None
            token, expires_at = entry
            if self._clock() >= expires_at:
                del self._tokens[challenge]
                return None
            return token

    def put(self, challenge: BearerChallenge, token: str, expires_in: int) -> None:
        """Keep ``token`` for ``expires_in`` seconds (the default lifetime when not positive)."""
        lifetime = expires_in if expires_in > 0 else DEFAULT_TOKEN_SECONDS
        with self._lock:
            self._tokens[challenge] = (token, self._clock() + max(lifetime - EXPIRY_MARGIN_SECONDS, 1))

    def drop(self, challenge: BearerChallenge) -> None:
        """Forget the token of ``challenge`` (the registry refused it)."""
        with self._lock:
            self._tokens.pop(challenge, None)
