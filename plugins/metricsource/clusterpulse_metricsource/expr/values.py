"""Moved to :mod:`clusterpulse_model.values` so every plugin's functions can use the same conversions."""

from clusterpulse_model.values import *  # noqa: F403
