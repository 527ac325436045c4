"""The merge patch that brings a RegistryConnection's status to a new value (docs/compatibility.md#c10).

A JSON merge patch (RFC 7386) only adds and replaces keys, so a field the new status leaves
out (an empty ``version``, a feature no longer detected) is removed explicitly with ``null``.
Fields this plugin does not manage are never touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterpulse_core import serde
from clusterpulse_registry.resource import RegistryConnectionStatus

#: Status keys written by every check; ``repositoryCount`` only when the catalog is checked.
MANAGED_KEYS = ("phase", "health", "available", "lastCheckTime", "responseTime", "message", "version", "features")
CATALOG_KEY = "repositoryCount"


def _diff(old: Any, new: Any) -> Any:
    """The merge patch turning ``old`` into ``new`` (objects recursively, anything else replaced)."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old or old[key] != value:
            patch[key] = _diff(old.get(key), value)
    return patch


def status_patch(old: Mapping[str, Any], new: RegistryConnectionStatus, catalog_checked: bool) -> dict[str, Any]:
    """The status merge patch (the value of ``status``) from the raw old status to ``new``."""
    wanted = serde.unstructure(new)
    keys = (*MANAGED_KEYS, CATALOG_KEY) if catalog_checked else MANAGED_KEYS
    patch: dict[str, Any] = {}
    for key in keys:
        if key in wanted:
            if old.get(key) != wanted[key]:
                patch[key] = _diff(old.get(key), wanted[key])
        elif key in old:
            patch[key] = None
    return patch
