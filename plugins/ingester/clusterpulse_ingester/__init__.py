"""ClusterPulse push mode: the gRPC ingester and the collector agent."""
