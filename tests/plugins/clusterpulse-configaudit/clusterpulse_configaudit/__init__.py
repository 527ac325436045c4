"""ConfigAudit: counts the ConfigMaps of a hub namespace (the plugin the author's guide builds)."""
