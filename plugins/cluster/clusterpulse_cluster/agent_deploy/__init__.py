"""Push mode: the hub installs, upgrades and removes the collector agent on managed clusters (§7.6)."""
