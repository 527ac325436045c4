"""Logging set-up from ``LOG_LEVEL`` (docs/compatibility.md#manager)."""

from __future__ import annotations

import logging
import threading
from contextvars import ContextVar

_LEVELS = {
    "debug": logging.DEBUG,
    "trace": logging.DEBUG,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def level_for(name: str) -> int:
    """``debug``/``trace``, ``warn``/``warning``, ``error`` (any case); anything else is info."""
    return _LEVELS.get(name.strip().lower(), logging.INFO)


#: Longest logged message, characters: a spec field or a remote error can be megabytes long.
MAX_LOG_MESSAGE = 4096


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = f"...[{len(text) - limit} more characters truncated]"
    return text[: max(limit - len(marker), 0)] + marker


def _message(record: logging.LogRecord) -> str | None:
    """The record's formatted message, or ``None`` when its arguments do not fit its format: the
    handler then reports the bad call (``Handler.handleError``) instead of the filter raising it
    into the code that logged."""
    try:
        return record.getMessage()
    except Exception:
        return None


class ClipFilter(logging.Filter):
    """Cuts every record's message to ``limit`` characters (strings from specs and remote errors)."""

    def __init__(self, limit: int = MAX_LOG_MESSAGE) -> None:
        super().__init__()
        self.limit = limit

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace an over-long message by its clipped text (always logs the record)."""
        message = _message(record)
        if message is not None and len(message) > self.limit:
            record.msg, record.args = clip(message, self.limit), None
        return True


#: The object whose reconcile this thread is running (``"Kind ns/name"``, ``""`` outside one): set
#: around every reconcile by the core's ``clusterpulse_reconcile_call`` wrapper.
CURRENT_OBJECT: ContextVar[str] = ContextVar("clusterpulse_current_object", default="")


class ObjectFilter(logging.Filter):
    """Names the object being reconciled in a line logged during its reconcile from any logger (a
    plugin's module logger, a library's): ``[Kind ns/name] message``, and ``record.object``.

    A record that already names its object (``ctx.log``, an :class:`ObjectLogger
    <clusterpulse_core.context.ObjectLogger>`) is left as it is.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Prefix the message when a reconcile is running in this thread (always logs the record)."""
        current = CURRENT_OBJECT.get()
        if current and not hasattr(record, "object"):
            record.object = current
            message = _message(record)
            if message is not None:
                record.msg, record.args = f"[{current}] {message}", None
        return True


def configure_logging(name: str) -> None:
    """Log to stderr at the level ``name`` gives, one line per record with the logger name,
    every message clipped to :data:`MAX_LOG_MESSAGE` characters, and a line logged during a
    reconcile naming its object (:class:`ObjectFilter`)."""
    logging.basicConfig(
        level=level_for(name),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        force=True,
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(ObjectFilter())
        handler.addFilter(ClipFilter())


class TracebackOnce:
    """Says whether an exception's traceback should be logged: the first time for each distinct error.

    Distinct = same type, message and the line that raised it; a reconcile failing the same way
    on every retry logs its traceback once, then one line per retry. At most ``limit`` errors
    are remembered (then the oldest is forgotten and may show its traceback again).
    """

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._seen: dict[tuple[str, str, str, int], None] = {}
        self._lock = threading.Lock()

    def exc_info(self, exc: BaseException) -> BaseException | None:
        """``exc`` (to pass as ``exc_info=``) the first time this error is seen, else ``None``."""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else ("", 0)
        key = (type(exc).__qualname__, str(exc), *where)
        with self._lock:
            if key in self._seen:
                return None
            self._seen[key] = None
            while len(self._seen) > self.limit:
                del self._seen[next(iter(self._seen))]
        return exc
