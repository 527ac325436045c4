"""ClusterPulse plugin: MonitorAccessPolicy, the access policies the ClusterPulse APIs authorize with."""
