"""Create-or-update of the agent objects, comparing only the fields the hub sets (docs/compatibility.md#c12).

A live object carries fields the API server filled in (``imagePullPolicy``, ``uid``,
``terminationMessagePath`` ...) and labels others added. :func:`covers` checks that every
field of the desired object has the same value in the live one, so an unchanged object is
never written; a changed one gets a single merge patch of the desired fields.
"""

from __future__ import annotations

from typing import Any

import attrs

from clusterpulse_cluster.agent_deploy.objects import (
    AgentObject,
    Namespace,
    ObjectType,
    Owner,
    describe,
    object_path,
    object_type,
    owner_of,
    to_wire,
)
from clusterpulse_core.breaker import CircuitOpenError
from clusterpulse_core.kube.client import ConflictError, KubeApiError, KubeClient, NotFoundError

CREATED = "created"
UPDATED = "updated"
UNCHANGED = "unchanged"
#: A Namespace that existed before the hub came is used but never labelled or removed.
FOREIGN = "foreign"


#: What a call to a managed cluster raises when it fails (an API error, or the breaker is open).
REMOTE_ERRORS = (KubeApiError, CircuitOpenError)


class AgentDeployError(Exception):
    """One step failed; the message starts with the step's docs/compatibility.md#agent-deployment prefix and names
    the object."""


class AgentDeferred(AgentDeployError):
    """The agent cannot be deployed yet (what it needs from the hub is not there yet, e.g. the ingester has
    not published its CA bundle): only the deployment waits, the cluster is collected by pull meanwhile."""


def covers(live: Any, desired: Any) -> bool:
    """Whether ``live`` holds every field of ``desired`` with the same value.

    Maps: each desired key must be covered (extra live keys are ignored; an empty desired
    map or list also matches a missing field). Lists: same length, element by element.
    """
    if isinstance(desired, dict):
        if not desired and live is None:
            return True
        if not isinstance(live, dict):
            return False
        return all(covers(live.get(key), value) for key, value in desired.items())
    if isinstance(desired, list):
        if not desired and live is None:
            return True
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        return all(covers(have, want) for have, want in zip(live, desired, strict=True))
    return bool(live == desired)


@attrs.frozen
class Applier:
    """Writes agent objects to one managed cluster; every call has ``timeout`` seconds."""

    client: KubeClient
    timeout: float

    def get(self, obj: AgentObject) -> Any | None:
        """The live object, or ``None`` when it does not exist."""
        try:
            return self.client.get(object_path(obj), timeout=self.timeout)
        except NotFoundError:
            return None

    def ensure(self, prefix: str, obj: AgentObject) -> str:
        """Create ``obj`` or bring its fields up to date; returns what was done."""
        desired = to_wire(obj)
        try:
            live = self.get(obj)
            if live is None:
                try:
                    self.client.request(
                        "POST",
                        object_type(obj).path(namespace=obj.metadata.namespace),
                        body=desired,
                        timeout=self.timeout,
                    )
                    return CREATED
                except ConflictError:
                    live = self.get(obj)  # created meanwhile: compare with it
                    if live is None:
                        raise
            if isinstance(obj, Namespace) and owner_of(live) is None:
                return FOREIGN
            if covers(live, desired):
                return UNCHANGED
            patch = {key: value for key, value in desired.items() if key not in ("apiVersion", "kind")}
            self.client.merge_patch(object_path(obj), patch, timeout=self.timeout)
            return UPDATED
        except REMOTE_ERRORS as exc:
            raise AgentDeployError(f"{prefix}: {describe(obj)}: {exc or type(exc).__name__}") from exc

    def get_at(self, otype: ObjectType, name: str, namespace: str) -> Any | None:
        """The live object at a removal-order entry, or ``None``."""
        try:
            return self.client.get(otype.path(name, namespace), timeout=self.timeout)
        except NotFoundError:
            return None

    def remove(self, otype: ObjectType, name: str, namespace: str, owner: Owner | None) -> bool:
        """Delete the object if it exists and belongs to ``owner`` (any hub owner when ``None``).

        ``True`` when it was deleted or was absent, ``False`` when it is not ours (left
        alone). Raises one of :data:`REMOTE_ERRORS` when the cluster cannot be asked or refuses.
        """
        live = self.get_at(otype, name, namespace)
        if live is None:
            return True
        found = owner_of(live)
        if found is None or (owner is not None and found != owner):
            return False
        try:
            self.client.request("DELETE", otype.path(name, namespace), timeout=self.timeout)
        except NotFoundError:
            pass
        return True
