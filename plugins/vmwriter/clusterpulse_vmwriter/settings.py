"""``[plugins.vmwriter]``: where and how history is written (env ``VM_ENABLED``, ``VM_ENDPOINT``)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import attrs

from clusterpulse_core.config import ConfigError, setting
from clusterpulse_vmwriter.lines import BUILTIN_LABELS

IMPORT_PATH = "/api/v1/import/prometheus"
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@attrs.frozen
class VMSettings:
    """VictoriaMetrics writer settings; the upstream environment variables override the file."""

    endpoint: str = setting("http://victoriametrics:8428", env="VM_ENDPOINT",
                            help="VictoriaMetrics base URL (trailing / ignored)")
    enabled: bool = setting(False, env="VM_ENABLED", help="write history; false = no backend at all")
    timeout: float = setting(10.0, help="HTTP timeout of one import request, seconds")
    batch_size: int = setting(20000, minimum=1, help="maximum lines per import request")
    # setting() returns an attrs field with a factory, not a shared default instance.
    extra_labels: dict[str, str] = setting(factory=dict, help="labels added to every series")  # noqa: RUF009
    username: str = setting("", help="basic auth user name")
    password: str = setting("", secret=True, help="basic auth password")
    bearer_token: str = setting("", secret=True, help="bearer token (Authorization header)")
    queue_cycles: int = setting(10, minimum=1,
                                help="collection cycles kept per series group while VictoriaMetrics is down")
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

    def check(self) -> None:
        """Raise :class:`ConfigError` for values that are well typed but unusable."""
        if urlsplit(self.base_url).scheme not in ("http", "https") or not urlsplit(self.base_url).netloc:
            raise ConfigError(f"plugins.vmwriter.endpoint: expected an http(s) URL, got {self.endpoint!r}")
        for name in self.extra_labels:
            if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
                raise ConfigError(f"plugins.vmwriter.extra_labels.{name}: not a valid label name")
            if name in BUILTIN_LABELS:
                raise ConfigError(f"plugins.vmwriter.extra_labels.{name}: reserved for the writer's own label")
        if self.username and self.bearer_token:
            raise ConfigError("plugins.vmwriter: set either username/password or bearer_token, not both")
        if self.timeout <= 0 or self.retry_backoff <= 0 or self.retry_backoff_max < self.retry_backoff:
            raise ConfigError("plugins.vmwriter: timeout and retry_backoff must be > 0 and "
                              "retry_backoff_max >= retry_backoff")
