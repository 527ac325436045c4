"""The collector agent: collects its own cluster with the plugins' collectors and pushes to the ingester."""
