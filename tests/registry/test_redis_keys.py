"""Stored keys (docs/compatibility.md#redis-keys, docs/compatibility.md#deletion) through the redis plugin's
entry point, against a real registry."""

from __future__ import annotations

from collections.abc import Callable

import redis
from clusterpulse_redis import RedisSettings
from registry_support import PASSWORD, REPOSITORIES, USERNAME, RegistryHub, RunningRegistry

from clusterpulse_core.serde import loads, parse_time


def test_reconcile_and_deletion_keys(
    make_hub: Callable[..., RegistryHub], redis_url: str, docker_registry: RunningRegistry
) -> None:
    hub = make_hub(names=["registry", "redis"], settings={"redis": RedisSettings(url=redis_url)})
    hub.secret("creds", USERNAME, PASSWORD)
    hub.create(
        "local",
        {
            "endpoint": docker_registry.url,
            "credentialsRef": {"name": "creds"},
            "monitoring": {"checkCatalog": True, "interval": 45},
            "labels": {"tier": "test"},
        },
    )
    client = redis.Redis.from_url(redis_url)

    outcome = hub.reconcile("local")

    assert outcome.ok, outcome.detail
    assert outcome.requeue_after == 45
    assert client.smembers("registries:all") == {b"local"}
    spec = loads(client.get("registry:local:spec"))  # type: ignore[arg-type]
    assert spec == {
        "display_name": "",
        "endpoint": docker_registry.url,
        "type": "",
        "insecure": False,
        "skip_tls": False,
        "labels": {"tier": "test"},
        "monitoring": {"interval": 45, "timeout": 0, "check_catalog": True, "max_catalog_entries": 0},
        "credentials_ref": {"name": "creds", "namespace": ""},
    }
    assert client.ttl("registry:local:spec") == -1
    status = loads(client.get("registry:local:status"))  # type: ignore[arg-type]
    assert set(status) == {
        "available",
        "response_time",
        "version",
        "repository_count",
        "features",
        "repositories",
        "last_check",
    }
    assert (status["available"], status["repository_count"], status["repositories"]) == (
        True,
        len(REPOSITORIES),
        list(REPOSITORIES),
    )
    parse_time(status["last_check"])
    assert 0 < client.ttl("registry:local:status") <= 600
    meta = client.hgetall("registry:local:meta")
    assert meta[b"available"] == b"true"
    [(member, score)] = client.zrange("registry:local:metrics", 0, -1, withscores=True)  # type: ignore[misc]
    sample = loads(member)
    assert sample == {"timestamp": int(score), "response_time": status["response_time"], "available": True}
    assert loads(client.get("registry:local:metrics:latest")) == sample  # type: ignore[arg-type]
    [event] = [loads(item) for item in client.lrange("events:local", 0, -1)]  # type: ignore[union-attr]
    assert (event["type"], event["cluster"]) == ("registry.reconciled", "local")
    assert event["data"] == {
        "health": "healthy",
        "available": True,
        "response_time": status["response_time"],
        "display_name": "",
        "type": "",
    }

    assert hub.delete("local").ok

    assert client.keys("registry:local:*") == []
    assert client.smembers("registries:all") == set()
    newest = loads(client.lindex("events:local", 0))  # type: ignore[arg-type]
    assert (newest["type"], newest["cluster"], newest["data"]) == ("registry.deleted", "local", None)
    client.close()


def test_unreachable_registry_is_stored_with_its_error(
    make_hub: Callable[..., RegistryHub], redis_url: str, docker_registry: RunningRegistry
) -> None:
    hub = make_hub(names=["registry", "redis"], settings={"redis": RedisSettings(url=redis_url)})
    hub.create("down", {"endpoint": docker_registry.url})
    docker_registry.process.stop()
    client = redis.Redis.from_url(redis_url)

    assert not hub.reconcile("down").ok

    status = loads(client.get("registry:down:status"))  # type: ignore[arg-type]
    assert status["available"] is False
    assert status["error"].startswith("request failed: ")
    assert status["repositories"] == [] and status["features"] == {}
    assert client.hget("registry:down:meta", "available") == b"false"
    event = loads(client.lindex("events:down", 0))  # type: ignore[arg-type]
    assert event["data"]["health"] == "unhealthy"
    client.close()
