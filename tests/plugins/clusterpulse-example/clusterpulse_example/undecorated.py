"""A plugin that forgot ``@hookimpl`` on its hook and ``clusterpulse_api_version`` (two load warnings)."""

from __future__ import annotations

from clusterpulse_core.hookspecs import Register


def clusterpulse_register_functions(register: Register) -> None:
    """Never called: pluggy only registers functions marked with ``@hookimpl``."""
    register("undecorated", lambda: 1, min_args=0, max_args=0)
