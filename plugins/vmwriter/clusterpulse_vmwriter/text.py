"""The Prometheus text exposition format as VictoriaMetrics imports it (docs/compatibility.md#victoriametrics, C11).

One line per sample: ``<metric>{<labels>} <value> <timestamp_ms>``. Values are rendered as
Go's ``%v`` renders them (the upstream writer's text), metric names are sanitised and label
values escaped as the text format requires.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

#: A label set in output order: ``(name, value)`` pairs, ``cluster`` first.
LabelPairs = Iterable[tuple[str, str]]

_VALID_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_INVALID_METRIC_CHAR = re.compile(r"[^a-zA-Z0-9_:]")
#: Below this magnitude Go's %v (and Python's repr) switch to the exponent form.
_SMALL = 1e-4
#: From this magnitude Go's %v uses the exponent form; Python's repr only from 1e16.
_LARGE = 1e6
_REPR_LARGE = 1e16


def float_text(value: float) -> str:
    """``value`` as Go's ``%v`` prints a float64: shortest round-trip digits, ``e±XX`` outside [1e-4, 1e6)."""
    magnitude = abs(value)
    if _SMALL <= magnitude < _LARGE:  # the common case first (false for NaN, infinities and zeros)
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    if magnitude < _SMALL or magnitude >= _REPR_LARGE:
        # repr already writes d[.ddd]e±XX with a sign and at least two exponent digits, as Go does.
        return repr(value)
    # 1e6 <= |value| < 1e16: repr is positional ("1234567.0"); re-shape its digits.
    sign = "-" if value < 0 else ""
    whole, _, fraction = repr(magnitude).partition(".")
    digits = (whole + fraction).rstrip("0")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e+{len(whole) - 1:02d}"


def value_text(value: bool | int | float) -> str:
    """A sample value: bools as ``1``/``0``, integers in plain decimal, floats as :func:`float_text`."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return float_text(value)


def escape_label_value(value: str) -> str:
    """Escape backslash, double quote and newline as the Prometheus text format requires (C11)."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def sanitize_metric_name(name: str) -> str:
    """Make ``name`` match ``[a-zA-Z_:][a-zA-Z0-9_:]*``: other characters become ``_`` (C11)."""
    if _VALID_METRIC_NAME.fullmatch(name):
        return name
    cleaned = _INVALID_METRIC_CHAR.sub("_", name)
    return cleaned if cleaned[:1] and not cleaned[0].isdigit() else "_" + cleaned


def render_labels(labels: LabelPairs) -> str:
    """``{a="x",b="y"}`` with escaped values, in the given order (empty text for no labels)."""
    inner = ",".join(f'{name}="{escape_label_value(value)}"' for name, value in labels)
    return "{" + inner + "}" if inner else ""


def sample_line(metric: str, rendered_labels: str, value: str, ts_ms: int) -> str:
    """One line from parts already rendered (the hot path: label sets are rendered once per series group)."""
    return f"{metric}{rendered_labels} {value} {ts_ms}"


def format_line(
    metric: str, cluster: str, node: str, value: bool | int | float, ts_ms: int, extra: LabelPairs = ()
) -> str:
    """One sample line: labels ``cluster``, then ``node`` when non-empty, then ``extra`` (upstream formatLine)."""
    labels = [("cluster", cluster)]
    if node:
        labels.append(("node", node))
    labels.extend(extra)
    return sample_line(sanitize_metric_name(metric), render_labels(labels), value_text(value), ts_ms)
