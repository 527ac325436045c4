"""Example ClusterPulse plugins: a working one, and broken ones for the discovery tests."""
