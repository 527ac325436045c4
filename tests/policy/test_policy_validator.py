"""The leader-only start-up clean-up and periodic validator, and the four upstream settings."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from clusterpulse_policy.settings import PolicySettings
from clusterpulse_policy.validator import LEADER_POLL, Validator
from clusterpulse_redis import RedisSettings
from clusterpulse_testing.polling import eventually
from policy_support import NAMESPACE, piece, spec

from clusterpulse_core.config import Config, CoreSettings
from clusterpulse_core.context import Runtime
from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.serde import loads

NOW = datetime(2025, 6, 1, tzinfo=UTC)
#: Slack for one store round trip on a loaded machine.
WAIT = CoreSettings().request_timeout


@pytest.fixture
def runtime(kube_api: Any, redis_url: str) -> Iterator[Runtime]:
    api = kube_api()
    host = PluginHost(["redis", "policy"])
    config = Config(
        core=CoreSettings(plugins=tuple(host.order), namespace=NAMESPACE),
        plugins={"redis": RedisSettings(url=redis_url), "policy": None},
    )
    host.configure(config)
    built = build_runtime(config, host, hub=KubeClient(api.api_client(), timeout=10))
    yield built
    for backend in built.store.backends:
        backend.close()


def test_only_the_leader_cleans_up_and_validates(runtime: Runtime, redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    runtime.store.put(piece("p1", spec(users=("alice",)), NOW))
    client.set("policy:eval:alice:c1", "1")
    leading = False
    answers: list[bool] = []  # every leader check the validator made, in order

    def leader_check() -> bool:
        answers.append(leading)
        return leading

    def declined_since(mark: int) -> int:
        return sum(1 for answer in answers[mark:] if not answer)

    def idle_for_three_polls(key: str, runs: int) -> None:
        """Nothing touched while the validator asks three times (and is told it does not lead)."""
        mark = len(answers)

        def untouched_so_far() -> bool:
            assert client.exists(key) and validator.runs == runs
            return declined_since(mark) >= 3

        eventually(untouched_so_far, "three declined leader polls", 3 * LEADER_POLL + WAIT)
        assert client.exists(key) and validator.runs == runs

    runtime.leader_check = leader_check
    validator = Validator(runtime, interval=0.2, clock=lambda: NOW)
    validator.start()
    try:
        # not leading: the validator polls (every LEADER_POLL) and touches nothing
        idle_for_three_polls("policy:eval:alice:c1", 0)
        assert "validated_at" not in loads(client.hget(f"policy:{NAMESPACE}:p1", "status"))
        leading = True
        # the clean-up at once, then one run per interval (and the leader poll before noticing)
        eventually(lambda: validator.runs >= 2, "two validations", 2 * validator.interval + LEADER_POLL + WAIT)
        assert not client.exists("policy:eval:alice:c1")
        assert loads(client.hget(f"policy:{NAMESPACE}:p1", "status")) == {
            "state": "Active",
            "message": "Policy is active",
            "validated_at": "2025-06-01T00:00:00Z",
        }
        leading = False
        # A run in progress has finished once the validator's thread asks again and is told no.
        mark = len(answers)
        eventually(lambda: declined_since(mark) >= 1, "the validator to see it no longer leads", LEADER_POLL + WAIT)
        runs = validator.runs
        client.set("policy:eval:bob:c1", "1")
        idle_for_three_polls("policy:eval:bob:c1", runs)
    finally:
        validator.stop()
        client.close()


def test_a_manager_tells_its_runtime_who_leads(runtime: Runtime) -> None:
    from clusterpulse_core.runtime.manager import Manager

    assert runtime.is_leader()  # no manager: the one process leads
    manager = Manager(runtime)
    assert not runtime.is_leader()  # created, not started
    assert runtime.leader_check is not None and manager.is_leader is False


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, (300, 300, 300, 100)),
        (
            {
                "POLICY_VALIDATION_INTERVAL": "120",
                "POLICY_CACHE_TTL": "90",
                "GROUP_CACHE_TTL": "61",
                "MAX_POLICIES_PER_USER": "5",
            },
            (120, 90, 61, 5),
        ),
        (
            {
                "POLICY_VALIDATION_INTERVAL": "10",
                "POLICY_CACHE_TTL": "1",
                "GROUP_CACHE_TTL": "x",
                "MAX_POLICIES_PER_USER": "0",
            },
            (60, 60, 300, 1),
        ),
    ],
)
def test_the_upstream_variables_names_defaults_and_minimums(
    tmp_path: Any, env: dict[str, str], expected: tuple[int, int, int, int]
) -> None:
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text('[clusterpulse]\nplugins = ["policy"]\n')
    config, _host = load(str(config_file), env=env)
    settings = config.plugins["policy"]
    assert isinstance(settings, PolicySettings)
    assert (
        settings.validation_interval,
        settings.policy_cache_ttl,
        settings.group_cache_ttl,
        settings.max_policies_per_user,
    ) == expected
