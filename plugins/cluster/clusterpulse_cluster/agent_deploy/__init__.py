"""Push mode: the hub installs, upgrades and removes the collector agent on managed clusters
(docs/compatibility.md#agent-deployment)."""
