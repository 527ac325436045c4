"""The ``reconcile_registry_connection`` golden example of redis_examples.json, end to end.

Emulated hub + a registry answering as the example says + the real redis plugin on a real
redis-server. The example's endpoint (``https://registry.example.com``) is kept: an HTTP
CONNECT proxy on 127.0.0.1 (``HTTPS_PROXY``) tunnels it to the scripted registry, whose
certificate for that name comes from the test CA (``REQUESTS_CA_BUNDLE``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest
import redis
from clusterpulse_redis import RedisSettings, RedisStore
from clusterpulse_registry.plugin import RegistryPlugin
from clusterpulse_testing.vectors import cases, same_value
from registry_pki import Pki
from registry_scripted import ConnectProxy, ScriptedRegistry
from registry_servers import wait_until
from registry_support import RegistryHub, fixed_clock

from clusterpulse_core import hookimpl
from clusterpulse_core.serde import loads, parse_time

OPERATION = "reconcile_registry_connection"


class FixedClockRedisPlugin:
    """The redis plugin's :class:`RedisStore` on the test's server, with the example's clock.

    The store trims samples older than its clock minus ``METRICS_RETENTION``, so its clock
    must be the example's too.
    """

    def __init__(self, url: str, clock: Callable[[], datetime]) -> None:
        self.store = RedisStore(RedisSettings(url=url), clock=clock)

    @hookimpl
    def clusterpulse_storage_backends(self) -> Sequence[RedisStore]:
        """The store."""
        return [self.store]


def _read(client: redis.Redis, key: str) -> dict[str, Any]:
    """The key as the example describes it: type, TTL and value."""
    kind = client.type(key).decode()
    entry: dict[str, Any] = {"type": kind, "ttl": client.ttl(key)}
    if kind == "string":
        entry["json"] = loads(client.get(key))  # type: ignore[arg-type]
    elif kind == "hash":
        entry["fields"] = {k.decode(): v.decode() for k, v in client.hgetall(key).items()}  # type: ignore[union-attr]
    elif kind == "set":
        entry["members"] = sorted(m.decode() for m in client.smembers(key))  # type: ignore[union-attr]
    elif kind == "zset":
        entry["members"] = [
            {"score": score, "json": loads(member)} for member, score in client.zrange(key, 0, -1, withscores=True)
        ]  # type: ignore[union-attr]
    elif kind == "list":
        entry["items"] = [loads(item) for item in client.lrange(key, 0, -1)]  # type: ignore[union-attr]
    return entry


def _ttl_ok(observed: int, expected: Any) -> bool:
    if expected is None:
        return observed == -1
    return 0 < observed <= int(expected["seconds"])


def _with_response_time(value: Any, measured: int, expected: int) -> Any:
    """``value`` with every ``response_time`` equal to ``measured`` replaced by ``expected``."""
    if isinstance(value, dict):
        return {
            k: expected if k == "response_time" and v == measured else _with_response_time(v, measured, expected)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_with_response_time(v, measured, expected) for v in value]
    return value


def _examples() -> list[dict[str, Any]]:
    """The examples made of registry reconciles (the other writer operations are the redis plugin's)."""
    return [e for e in cases("redis", "examples") if any(op["op"] == OPERATION for op in e["operations"])]


def test_the_file_has_a_registry_reconcile_example() -> None:
    assert _examples(), f"no {OPERATION} example in redis_examples.json"


@pytest.fixture
def routed_registry(
    pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[dict[str, Any]], tuple[ScriptedRegistry, ConnectProxy]]]:
    """``route(script)``: serve ``script`` as https://registry.example.com through a CONNECT proxy."""
    started: list[Any] = []

    def route(script: dict[str, Any]) -> tuple[ScriptedRegistry, ConnectProxy]:
        registry = ScriptedRegistry(script, pki.server_cert, pki.server_key).start()
        proxy = ConnectProxy(registry.port).start()
        started.extend([proxy, registry])
        for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # the hub emulator (HTTPS too) is reached directly
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("https_proxy", proxy.url)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki.ca_cert))
        return registry, proxy

    yield route
    for server in started:
        server.stop()


@pytest.mark.parametrize("example", _examples(), ids=lambda e: str(e["id"]))
def test_registry_reconcile_example(
    example: dict[str, Any],
    make_hub: Callable[..., RegistryHub],
    redis_url: str,
    routed_registry: Callable[..., tuple[ScriptedRegistry, ConnectProxy]],
) -> None:
    [operation] = example["operations"]
    assert operation["op"] == OPERATION
    args = operation["args"]
    client = redis.Redis.from_url(redis_url)
    pubsub = client.pubsub()
    pubsub.subscribe(*{p["channel"] for p in example.get("published", [])})
    assert wait_until(lambda: pubsub.get_message(timeout=0.1) is not None), "subscription not confirmed"
    registry, proxy = routed_registry(args["registry"])
    clock = fixed_clock(parse_time(args["clock"]))
    hub = make_hub(
        names=[], extra={"registry": RegistryPlugin(clock=clock), "redis": FixedClockRedisPlugin(redis_url, clock)}
    )
    name = args["registry_connection"]["metadata"]["name"]
    ref = args["registry_connection"]["spec"].get("credentialsRef")
    if ref:
        # The Secret it names exists (the example does not say otherwise): a missing one would be
        # an Error naming spec.credentialsRef here, where upstream checked anonymously (C15).
        hub.secret(ref["name"], "robot", "robot-password")
    hub.create(name, args["registry_connection"]["spec"])

    outcome = hub.reconcile(name)

    assert outcome.ok, outcome.detail
    assert registry.seen == list(args["registry"])
    assert set(proxy.tunnels) == {"registry.example.com:443"}
    # The response time is measured, so it differs from the example's (its only volatile value):
    # it must be at least the registry's scripted delay, and the same number in status, samples
    # and event, where the example's value is put in its place before comparing.
    assert all(path.endswith(".response_time") for path in example.get("volatile", []))
    measured = loads(client.get(f"registry:{name}:status"))["response_time"]  # type: ignore[arg-type]
    assert isinstance(measured, int) and measured >= args["registry"]["GET /v2/"].get("elapsed_ms", 0)
    expected_time = example["keys"][f"registry:{name}:status"]["json"]["response_time"]
    for key, want in example["keys"].items():
        got = _read(client, key)
        assert got["type"] == want["type"], key
        assert _ttl_ok(got["ttl"], want["ttl"]), f"{key}: ttl {got['ttl']}, want {want['ttl']}"
        got_value = _with_response_time(
            {k: v for k, v in got.items() if k not in ("type", "ttl")}, measured, expected_time
        )
        want_value = {k: v for k, v in want.items() if k not in ("type", "ttl")}
        assert same_value(got_value, want_value, strict_types=False), f"{key}: {got_value} != {want_value}"
    for key in example.get("absent_keys", []):
        assert not client.exists(key), key

    for want in example.get("published", []):
        message = None
        for _ in range(50):
            message = pubsub.get_message(timeout=0.1)
            if message is not None and message["type"] == "message":
                break
        assert message is not None and message["type"] == "message", "no event published"
        assert message["channel"].decode() == want["channel"]
        published = _with_response_time(loads(message["data"]), measured, expected_time)
        assert same_value(published, want["json"], strict_types=False)
    pubsub.close()
    client.close()
