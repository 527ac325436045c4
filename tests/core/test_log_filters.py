"""The filters configure_logging puts on every handler never raise into the code that logs.

A log call whose arguments do not fit its format (``log.info("%d pods", "x")``, in a plugin or a
library) is reported by the handler (``Handler.handleError``) as logging always does; the filters
clipping the message and naming the reconciled object must not turn it into an exception in the
reconcile that logged it.
"""

from __future__ import annotations

import logging

import pytest

from clusterpulse_core.logs import CURRENT_OBJECT, ClipFilter, ObjectFilter


class Recording(logging.Handler):
    """Keeps the formatted lines and the records whose formatting failed."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.failed: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        self.failed.append(record)


@pytest.mark.parametrize("reconciling", [False, True])
def test_a_bad_log_call_is_reported_by_the_handler_not_raised(reconciling: bool) -> None:
    handler = Recording()
    handler.addFilter(ObjectFilter())
    handler.addFilter(ClipFilter(limit=60))
    logger = logging.getLogger("clusterpulse.test_log_filters")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    token = CURRENT_OBJECT.set("Widget ns/w1" if reconciling else "")
    try:
        logger.info("%d pods", "not a number")  # raised TypeError out of the filters before
        logger.info("then %s", "x" * 100)
    finally:
        CURRENT_OBJECT.reset(token)
        logger.removeHandler(handler)
        logger.propagate = True
    assert [record.msg for record in handler.failed] == ["%d pods"]
    prefix = "[Widget ns/w1] " if reconciling else ""
    assert len(handler.lines) == 1 and handler.lines[0].startswith(f"{prefix}then xxx")
    assert handler.lines[0].endswith("more characters truncated]") and len(handler.lines[0]) == 60
