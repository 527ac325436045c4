"""ClusterPulse core: the plugin contract, configuration, runtime and Kubernetes access.

Plugins implement the hooks declared in :mod:`clusterpulse_core.hookspecs` and mark
their implementations with :data:`hookimpl`::

    from clusterpulse_core import hookimpl

    @hookimpl
    def clusterpulse_register_functions(register):
        register("double", lambda x: x * 2, min_args=1, max_args=1)
"""

import pluggy

PROJECT_NAME = "clusterpulse"
#: Version of the plugin contract. A plugin declares the version it was written for in a
#: ``clusterpulse_api_version`` attribute; a different major number is refused at start-up.
CORE_API_VERSION = 1

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["CORE_API_VERSION", "PROJECT_NAME", "hookimpl"]
