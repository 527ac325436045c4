"""Moved to :mod:`clusterpulse_model.textform` so every plugin can use the same text rules."""

from clusterpulse_model.textform import *  # noqa: F403
from clusterpulse_model.textform import GoParseError, filter_text, fstr, parse_go_float, parse_go_int  # noqa: F401
