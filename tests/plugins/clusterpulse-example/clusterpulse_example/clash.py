"""Registers a function name the ``example`` plugin registers too (a start-up error)."""

from typing import Any

from clusterpulse_core import hookimpl

clusterpulse_api_version = 1


@hookimpl
def clusterpulse_register_functions(register: Any) -> None:
    """Register ``shout`` again."""
    register("shout", lambda text: text, min_args=1, max_args=1)
