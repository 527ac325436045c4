"""``[plugins.vmwriter]``: where and how history is written (env ``VM_ENABLED``, ``VM_ENDPOINT``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from clusterpulse_core.config import ConfigError, setting
from clusterpulse_vmwriter.lines import BUILTIN_LABELS

IMPORT_PATH = "/api/v1/import/prometheus"
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@attrs.frozen
class VMSettings:
    """VictoriaMetrics writer settings; the upstream environment variables override the file."""

    endpoint: str = setting(
        "http://victoriametrics:8428", env="VM_ENDPOINT", help="VictoriaMetrics base URL (trailing / ignored)"
    )
    enabled: bool = setting(False, env="VM_ENABLED", help="write history; false = no backend at all")
    timeout: float = setting(10.0, help="HTTP timeout of one import request, seconds")
    batch_size: int = setting(20000, minimum=1, help="maximum lines per import request")
    # setting() returns an attrs field with a factory, not a shared default instance.
    extra_labels: dict[str, str] = setting(factory=dict, help="labels added to every series")  # noqa: RUF009
    username: str = setting("", env="VM_USERNAME", help="basic auth user name")
    password: str = setting("", env="VM_PASSWORD", secret=True, help="basic auth password")
    password_file: str = setting(
        "", env="VM_PASSWORD_FILE", help="file holding the basic auth password (a mounted Secret key), read at start"
    )
    bearer_token: str = setting("", env="VM_BEARER_TOKEN", secret=True, help="bearer token (Authorization header)")
    bearer_token_file: str = setting(
        "", env="VM_BEARER_TOKEN_FILE", help="file holding the bearer token (a mounted Secret key), read at start"
    )
    queue_cycles: int = setting(
        10, minimum=1, help="collection cycles kept per series group while VictoriaMetrics is down"
    )
    compress_above: int = setting(65536, minimum=0, help="gzip request bodies larger than this many bytes")
    retry_backoff: float = setting(1.0, help="first retry delay after a failed write, seconds (doubles)")
    retry_backoff_max: float = setting(30.0, help="longest retry delay, seconds")
    flush_timeout: float = setting(10.0, help="how long shutdown waits for queued writes, seconds")

    @property
    def base_url(self) -> str:
        """``endpoint`` with every trailing ``/`` removed."""
        return self.endpoint.rstrip("/")

    @property
    def import_url(self) -> str:
        """``<endpoint>/api/v1/import/prometheus``."""
        return self.base_url + IMPORT_PATH

    def basic_password(self) -> str:
        """``password``, else the content of ``password_file`` (its trailing newline removed)."""
        return self.password or _read_secret_file(self.password_file, "password_file")

    def token(self) -> str:
        """``bearer_token``, else the content of ``bearer_token_file`` (its trailing newline removed)."""
        return self.bearer_token or _read_secret_file(self.bearer_token_file, "bearer_token_file")

    def settings_warnings(self) -> Iterator[str]:
        """Insecure choices: credentials sent to an ``http://`` endpoint."""
        has_credentials = (
            self.username
            or self.password
            or self.password_file
            or self.bearer_token
            or self.bearer_token_file
            or urlsplit(self.base_url).password
        )
        if has_credentials and urlsplit(self.base_url).scheme == "http":
            yield (
                "endpoint: credentials are sent to VictoriaMetrics over plain http:// (use https://) "
                "(docs/security.md#credentials-of-redis-and-victoriametrics)"
            )

    def check(self) -> None:
        """Raise :class:`ConfigError` for values that are well typed but unusable."""
        if urlsplit(self.base_url).scheme not in ("http", "https") or not urlsplit(self.base_url).netloc:
            raise ConfigError(f"plugins.vmwriter.endpoint: expected an http(s) URL, got {self.endpoint!r}")
        for name in self.extra_labels:
            if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
                raise ConfigError(f"plugins.vmwriter.extra_labels.{name}: not a valid label name")
            if name in BUILTIN_LABELS:
                raise ConfigError(f"plugins.vmwriter.extra_labels.{name}: reserved for the writer's own label")
        if self.password and self.password_file:
            raise ConfigError(
                "plugins.vmwriter.password_file: set either password (VM_PASSWORD) or password_file, not both"
            )
        if self.bearer_token and self.bearer_token_file:
            raise ConfigError(
                "plugins.vmwriter.bearer_token_file: set either bearer_token (VM_BEARER_TOKEN) or "
                "bearer_token_file, not both"
            )
        if (self.username or self.password or self.password_file) and (self.bearer_token or self.bearer_token_file):
            raise ConfigError("plugins.vmwriter: set either username/password or bearer_token, not both")
        self.basic_password()
        self.token()
        if self.timeout <= 0 or self.retry_backoff <= 0 or self.retry_backoff_max < self.retry_backoff:
            raise ConfigError(
                "plugins.vmwriter: timeout and retry_backoff must be > 0 and retry_backoff_max >= retry_backoff"
            )


def _read_secret_file(path: str, key: str) -> str:
    if not path:
        return ""
    try:
        return Path(path).read_text().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"plugins.vmwriter.{key}: cannot read {path}: {exc}") from exc
