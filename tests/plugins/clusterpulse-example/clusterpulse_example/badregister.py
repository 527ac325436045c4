"""A plugin whose registration hook raises: it is marked broken, the rest of the CLI works."""

from __future__ import annotations

from clusterpulse_core import hookimpl
from clusterpulse_core.hookspecs import Register

clusterpulse_api_version = 1


@hookimpl
def clusterpulse_register_functions(register: Register) -> None:
    """Raises before registering anything."""
    raise ValueError("example-badregister cannot register its functions")
