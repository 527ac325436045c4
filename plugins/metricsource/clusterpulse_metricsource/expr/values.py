"""Moved to :mod:`clusterpulse_core.values` so every plugin's functions can use the same conversions."""

from clusterpulse_core.values import *  # noqa: F403
