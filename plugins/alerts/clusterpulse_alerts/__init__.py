"""ClusterPulse alerts: rules evaluated against every stored state, firing alerts stored through the fan-out.

The plugin is a storage backend that only reads: it keeps a view of each cluster and
registry from the pieces every reconcile stores, evaluates the built-in rules, the rules
other plugins register and the ``AlertRule`` objects, and stores alert pieces (and
``alert.fired`` / ``alert.resolved`` events) through the same fan-out.
"""
