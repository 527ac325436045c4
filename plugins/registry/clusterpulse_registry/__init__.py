"""ClusterPulse plugin: RegistryConnection, health monitoring of container registries (Docker Registry v2)."""
