"""A real manager with the policy plugin on the hub emulator and a real redis-server: create, update
(subject removed, effect change, disable), an invalid update, delete; after each step the Redis keys
are exactly the expected set and the CR status says what happened."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import redis
from clusterpulse_policy.kind import MONITOR_ACCESS_POLICY
from clusterpulse_testing.harness import Harness
from clusterpulse_testing.kube_api import ApiError
from clusterpulse_testing.polling import eventually
from policy_support import NAMESPACE, snapshot, spec

from clusterpulse_core.config import CoreSettings
from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.runtime.manager import Manager
from clusterpulse_core.serde import loads

#: One reconcile and its writes: bounded by one hub request timeout.
WAIT = CoreSettings().request_timeout
KEY = f"policy:{NAMESPACE}:team"
API = MONITOR_ACCESS_POLICY.api_version
HASH = {"data", "priority", "effect", "enabled", "hash", "compiled_at", "status"}


@pytest.fixture
def hub(kube_api: Any) -> Any:
    api = kube_api(objects=[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    api.create(crd_manifest(MONITOR_ACCESS_POLICY))
    return api


@pytest.fixture
def manager(hub: Any, redis_url: str, clusterpulse_manager: Callable[..., Harness]) -> Manager:
    return clusterpulse_manager(["redis", "policy"], hub, redis_url=redis_url, core={"namespace": NAMESPACE}).manager


def _keys(effect: str = "allow", enabled: bool = True, **indexes: tuple[str, ...]) -> dict[str, Any]:
    found: dict[str, Any] = {
        KEY: HASH,
        "policies:all": {KEY},
        "policies:by:priority": {KEY: 100.0},
        f"policies:effect:{effect}": {KEY},
    }
    if enabled:
        found["policies:enabled"] = {KEY}
    for kind, subjects in indexes.items():
        for subject in subjects:
            found[f"policy:{kind}:{subject}"] = {KEY}
            found[f"policy:{kind}:{subject}:sorted"] = {KEY: 100.0}
    return found


def test_create_update_invalid_update_and_delete(hub: Any, manager: Manager, redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)

    def status() -> dict[str, Any]:
        return dict((hub.get(API, "MonitorAccessPolicy", "team", NAMESPACE) or {}).get("status") or {})

    def update(body: dict[str, Any], validate: bool = True) -> None:
        obj = copy.deepcopy(hub.get(API, "MonitorAccessPolicy", "team", NAMESPACE))
        obj["spec"] = body
        hub.update(obj, validate=validate)

    def settled(expected: dict[str, Any], generation: int) -> bool:
        current = status().get("conditions") or [{}]
        return snapshot(client) == expected and current[0].get("observedGeneration") == generation

    hub.create(
        {
            "apiVersion": API,
            "kind": "MonitorAccessPolicy",
            "metadata": {"name": "team", "namespace": NAMESPACE},
            "spec": spec(users=("alice", "bob"), groups=("dev",)),
        }
    )
    eventually(lambda: settled(_keys(user=("alice", "bob"), group=("dev",)), 1), "the policy stored", WAIT)
    first = status()
    assert {
        k: first[k]
        for k in (
            "state",
            "message",
            "affectedUsers",
            "affectedGroups",
            "affectedServiceAccounts",
            "customResourceTypes",
        )
    } == {
        "state": "Active",
        "message": "Policy is active",
        "affectedUsers": 2,
        "affectedGroups": 1,
        "affectedServiceAccounts": 0,
        "customResourceTypes": 0,
    }
    data = loads(client.hget(KEY, "data"))
    assert (first["hash"], first["compiledAt"]) == (data["hash"], data["compiled_at"])
    [ready] = first["conditions"]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "True", "Active")

    update(spec(users=("alice",), groups=("dev",)))
    eventually(lambda: settled(_keys(user=("alice",), group=("dev",)), 2), "bob's indexes removed", WAIT)
    assert status()["affectedUsers"] == 1

    update(spec(users=("alice",), groups=("dev",), effect="Deny"))
    eventually(lambda: settled(_keys("deny", user=("alice",), group=("dev",)), 3), "the effect sets swapped", WAIT)

    update(spec(users=("alice",), groups=("dev",), effect="Deny", enabled=False))
    eventually(lambda: settled(_keys("deny", enabled=False), 4), "the subject indexes dropped", WAIT)
    disabled = status()
    assert (disabled["state"], disabled["message"]) == ("Inactive", "Policy is disabled")
    assert disabled["conditions"][0]["status"] == "False"
    good_data = client.hget(KEY, "data")

    invalid = spec(users=("alice",), groups=("dev",), effect="Deny", enabled=False, priority=0)
    # The CRD's minimum refuses it at the API server; one stored under a looser CRD reaches the controller.
    with pytest.raises(ApiError, match=r"spec\.identity\.priority in body should be greater than or equal to 1"):
        update(invalid)
    update(invalid, validate=False)
    failed = eventually(lambda: (s := status()).get("state") == "Error" and s, "the Error state", WAIT)
    assert failed["message"] == (
        "Compilation failed: validation failed: spec.identity.priority: invalid priority 0 (from 1 to 10000)"
    )
    assert failed["hash"] == disabled["hash"]  # other status fields keep their values
    assert failed["conditions"][0]["reason"] == "CompilationFailed"
    assert snapshot(client) == _keys("deny", enabled=False)
    assert client.hget(KEY, "data") == good_data
    stored_status = loads(client.hget(KEY, "status"))
    assert (stored_status["state"], stored_status["message"]) == ("Error", failed["message"])

    hub.delete(API, "monitoraccesspolicies", "team", NAMESPACE)
    eventually(lambda: snapshot(client) == {}, "every key removed", WAIT)
    client.close()


def test_time_based_states_reach_the_cr_on_time(hub: Any, manager: Manager, redis_url: str) -> None:
    from datetime import UTC, datetime, timedelta

    from clusterpulse_core.serde import format_time

    lead = timedelta(seconds=4)  # long enough to see Inactive first on a loaded machine
    start = datetime.now(UTC).replace(microsecond=0) + lead
    window = {"validity": {"notBefore": format_time(start), "notAfter": format_time(start + lead)}}
    hub.create(
        {
            "apiVersion": API,
            "kind": "MonitorAccessPolicy",
            "metadata": {"name": "team", "namespace": NAMESPACE},
            "spec": spec(users=("alice",), lifecycle=window),
        }
    )
    seen: list[str] = []

    def state() -> str:
        current = ((hub.get(API, "MonitorAccessPolicy", "team", NAMESPACE) or {}).get("status") or {}).get("state")
        if current and (not seen or seen[-1] != current):
            seen.append(current)
        return str(current)

    eventually(lambda: state() == "Expired", "the Expired state", WAIT + 2 * lead.total_seconds())
    assert seen == ["Inactive", "Active", "Expired"]
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    assert loads(client.hget(KEY, "status"))["message"] == "Policy expired"
    client.close()
