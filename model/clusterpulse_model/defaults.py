"""ClusterPulse's own plugins: what is enabled when the config names no plugins.

Declared here, in the distribution every first-party plugin depends on, and registered under the
entry-point group ``clusterpulse.defaults``; the core names no plugin.
"""

from clusterpulse_core.plugins import PluginDefaults

#: The first-party plugins in default load order, and the upstream variable that switches the
#: history writer on (``VM_ENABLED=true`` enables ``vmwriter`` even beside an explicit list).
DEFAULTS = PluginDefaults(
    plugins=("redis", "cluster", "registry", "metricsource", "policy", "alerts", "ingester", "vmwriter"),
    enabling_env={"vmwriter": "VM_ENABLED"},
)
