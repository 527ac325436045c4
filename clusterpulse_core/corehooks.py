"""The core's own hook implementations, registered as plugin ``core`` before any other plugin."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from clusterpulse_core import hookimpl
from clusterpulse_core.kinds import ObjectRef
from clusterpulse_core.logs import CURRENT_OBJECT


class CoreHooks:
    """Implements ``clusterpulse_reconcile_call``: the call itself, and the outermost wrapper around it."""

    @hookimpl(trylast=True)
    def clusterpulse_reconcile_call(self, call: Callable[[], Any]) -> Any:
        """Make the reconciler's call (the last implementation, the only plain one)."""
        return call()

    @hookimpl(specname="clusterpulse_reconcile_call", wrapper=True, tryfirst=True)
    def object_log_context(self, ref: ObjectRef) -> Generator[None, Any, Any]:
        """Name ``ref`` in every line logged in this thread during the call (and the other wrappers)."""
        token = CURRENT_OBJECT.set(str(ref))
        try:
            return (yield)
        finally:
            CURRENT_OBJECT.reset(token)
