"""Noticing that Redis lost its data (a restart without persistence, a flush) and asking for a resync.

Every ``check_interval`` seconds the watcher reads the server's ``run_id`` and whether
``clusters:all`` exists. A new ``run_id`` (the server restarted), or ``clusters:all`` gone after
it was seen (flushed), makes it call ``on_lost(reason)``: the plugin asks the manager to queue
every object at once, so the whole state is back within seconds instead of each object's next
interval. A failed check (Redis down) is remembered, and the first good check after it also
triggers, since writes may have been lost meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import redis

from clusterpulse_redis import keys

log = logging.getLogger(__name__)


class RestartWatcher:
    """A daemon thread checking one Redis for lost data."""

    def __init__(self, client: redis.Redis, on_lost: Callable[[str], None], check_interval: float = 1.0) -> None:
        self.client = client
        self.on_lost = on_lost
        self.check_interval = check_interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._run_id: str | None = None
        self._had_clusters = False
        self._unreachable = False

    def start(self) -> None:
        """Start checking in the background."""
        self._thread = threading.Thread(target=self._run, name="redis-restart-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop checking."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.check_interval + 5.0)

    def check(self) -> str | None:
        """One check; the reason the data may be lost, or None."""
        try:
            run_id = str(self.client.info("server").get("run_id", ""))
            has_clusters = bool(self.client.exists(keys.CLUSTERS_ALL))
        except redis.RedisError as exc:
            if not self._unreachable:
                log.warning("redis unreachable: %s", exc)
            self._unreachable = True
            return None
        reason = None
        if self._run_id is not None and run_id != self._run_id:
            reason = "redis restarted (new run_id)"
        elif self._had_clusters and not has_clusters:
            reason = f"redis lost {keys.CLUSTERS_ALL}"
        elif self._unreachable:
            reason = "redis is reachable again"
        self._run_id, self._unreachable = run_id, False
        self._had_clusters = has_clusters
        return reason

    def _run(self) -> None:
        while not self._stop.wait(self.check_interval):
            reason = self.check()
            if reason is not None:
                try:
                    self.on_lost(reason)
                except Exception:
                    log.exception("requesting a resync failed")
