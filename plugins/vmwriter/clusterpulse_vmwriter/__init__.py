"""ClusterPulse history backend: every stored piece becomes time series in VictoriaMetrics.

The public pure functions (:func:`format_line`, :func:`float_text`, :func:`custom_resource_line`,
:func:`operator_lines`, :func:`cluster_lines`, :func:`node_lines`) build the Prometheus text lines
of docs/compatibility.md#victoriametrics with docs/compatibility.md#c11; :class:`VMWriterBackend` ships them off the
reconcile's critical path.
"""

from clusterpulse_vmwriter.backend import VMWriterBackend
from clusterpulse_vmwriter.lines import (
    cluster_lines,
    custom_resource_line,
    custom_resource_lines,
    node_lines,
    operator_lines,
)
from clusterpulse_vmwriter.settings import VMSettings
from clusterpulse_vmwriter.text import escape_label_value, float_text, format_line, sanitize_metric_name

__all__ = [
    "VMSettings",
    "VMWriterBackend",
    "cluster_lines",
    "custom_resource_line",
    "custom_resource_lines",
    "escape_label_value",
    "float_text",
    "format_line",
    "node_lines",
    "operator_lines",
    "sanitize_metric_name",
]
