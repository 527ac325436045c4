"""ClusterPulse cluster plugin: ClusterConnection reconcile and the per-cluster collectors."""
