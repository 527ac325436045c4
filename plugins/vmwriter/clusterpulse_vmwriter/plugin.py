"""The ``vmwriter`` plugin: history in VictoriaMetrics as a storage backend."""

from __future__ import annotations

import logging

from clusterpulse_core import hookimpl
from clusterpulse_core.config import Config, mask_url
from clusterpulse_core.context import Runtime
from clusterpulse_core.store import StorageBackend
from clusterpulse_vmwriter.backend import VMWriterBackend
from clusterpulse_vmwriter.metrics import WriterMetrics
from clusterpulse_vmwriter.settings import VMSettings

log = logging.getLogger(__name__)


class VMWriterPlugin:
    """Writes cluster, node, operator and MetricSource aggregation history to VictoriaMetrics."""

    clusterpulse_api_version = 1

    def __init__(self) -> None:
        self.settings: VMSettings | None = None
        self.metrics = WriterMetrics()
        self.backend: VMWriterBackend | None = None

    @hookimpl
    def clusterpulse_settings_class(self) -> type:
        """``[plugins.vmwriter]`` is validated by :class:`VMSettings`."""
        return VMSettings

    @hookimpl
    def clusterpulse_configure(self, config: Config, settings: VMSettings) -> None:
        """Keep the settings; reject unusable combinations."""
        settings.check()
        self.settings = settings

    @hookimpl
    def clusterpulse_storage_backends(self) -> list[StorageBackend]:
        """One backend when ``enabled`` (``VM_ENABLED``), none otherwise."""
        if self.settings is None or not self.settings.enabled:
            return []
        if self.backend is None:
            self.backend = VMWriterBackend(self.settings, self.metrics)
            log.info("writing history to %s", mask_url(self.settings.import_url))
        return [self.backend]

    @hookimpl
    def clusterpulse_start(self, runtime: Runtime) -> None:
        """Serve the writer's metrics on the manager's ``/metrics``."""
        if self.backend is not None:
            self.metrics.publish(runtime.metrics)
