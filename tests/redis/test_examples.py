"""Every example of redis_examples.json: the keys, types, TTLs and values the backend writes."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from clusterpulse_model import (
    ClusterSpecRecord,
    ClusterStatusRecord,
    CustomResourceCollection,
    RegistryMetricsRecord,
    RegistrySpecRecord,
    RegistryStatusRecord,
)
from clusterpulse_redis import RedisStore
from clusterpulse_testing.vectors import cases, load, same_value, vector_test, with_reader_decisions
from redis_readback import blank_volatile, readback, split_volatile, ttl_matches, value_of
from redis_vector_ops import BUILDERS, RECONCILE_LEVEL_OPS, build_piece

from clusterpulse_core.serde import loads, parse_time, structure, unstructure

CLOCK = parse_time(load("redis")["conventions"]["clock"])

#: Examples of whole reconciles: run by the cluster and registry plugins' tests.
ROUTED_TO_RECONCILER_TESTS = {
    "cluster-reconcile-pull",
    "cluster-reconcile-failure",
    "olm-operators",
    "cluster-operators-with-issue",
    "registry-reconcile",
}

#: Upstream store tests that build values by hand in shapes the domain model does not have
#: (ad-hoc keys such as a registry spec ``{"url", "interval"}``, a status with only ``health``,
#: resource ``values: null``). Their expected value is read through the same model the
#: backend stores, so fields the model has are compared and ad-hoc ones cannot be.
AD_HOC_VALUES: dict[str, dict[str, type]] = {
    "cluster-status": {"cluster:c1:status": ClusterStatusRecord},
    "cluster-spec": {"cluster:c1:spec": ClusterSpecRecord},
    "registry-spec": {"registry:r1:spec": RegistrySpecRecord},
    "registry-status": {"registry:r1:status": RegistryStatusRecord},
    "registry-metrics": {
        "registry:r1:metrics": RegistryMetricsRecord,
        "registry:r1:metrics:latest": RegistryMetricsRecord,
    },
    "custom-resource-collection": {"cluster:cluster-1:custom:default/vms:resources": CustomResourceCollection},
}


def _reconcile_level(example: dict[str, Any]) -> bool:
    return any(op["op"] in RECONCILE_LEVEL_OPS for op in example["operations"])


def _as_model(json_value: Any, model: type) -> Any:
    return unstructure(structure(json_value, model))


def _expected(example: dict[str, Any], key: str) -> dict[str, Any]:
    want = dict(with_reader_decisions(example)["keys"][key])
    model = AD_HOC_VALUES.get(example["id"], {}).get(key)
    if model is not None:
        if "json" in want:
            want["json"] = _as_model(want["json"], model)
        if "members" in want:
            want["members"] = [{**m, "json": _as_model(m["json"], model)} for m in want["members"]]
    return want


def test_skipped_examples_are_exactly_the_reconcile_level_ones() -> None:
    examples = cases("redis", "examples")
    skipped = {e["id"] for e in examples if _reconcile_level(e)}
    assert skipped == ROUTED_TO_RECONCILER_TESTS
    for example in examples:
        if example["id"] in skipped:
            assert {op["op"] for op in example["operations"]} <= RECONCILE_LEVEL_OPS, example["id"]
        else:
            assert {op["op"] for op in example["operations"]} <= set(BUILDERS), example["id"]
    assert set(AD_HOC_VALUES) <= {e["id"] for e in examples}


def _collect_published(pubsub: redis.client.PubSub, count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + 5
    while len(messages) < count and time.monotonic() < deadline:
        message = pubsub.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if message and message["type"] == "message":
            messages.append({"channel": message["channel"].decode(), "json": loads(message["data"])})
    return messages


@vector_test("redis", "examples", argname="example")
def test_example(example: dict[str, Any], store: RedisStore, raw: redis.Redis) -> None:
    if _reconcile_level(example):
        assert example["id"] in ROUTED_TO_RECONCILER_TESTS
        return
    published = example.get("published", [])
    pubsub = raw.pubsub()
    if published:
        pubsub.subscribe(*{p["channel"] for p in published})
        assert pubsub.get_message(timeout=5) is not None  # the subscription is active
    try:
        for operation in example["operations"]:
            store.store([build_piece(operation, CLOCK)])
        got_published = _collect_published(pubsub, len(published)) if published else []
    finally:
        pubsub.close()

    problems: list[str] = []
    volatile: dict[str, list[list[str]]] = {}
    for path in example.get("volatile", []):
        split = split_volatile(path, list(example["keys"]))
        assert split is not None, f"volatile path {path!r} names no expected key"
        volatile.setdefault(split[0], []).append(split[1])

    for key in example["keys"]:
        want = _expected(example, key)
        got = readback(raw, key, want)
        if got["type"] != want["type"]:
            problems.append(f"{key}: type {got['type']}, want {want['type']}")
            continue
        if not ttl_matches(got["ttl"], want["ttl"]):
            problems.append(f"{key}: ttl {got['ttl']}, want {want['ttl']}")
        for parts in volatile.get(key, []):
            problems += [f"{key}: {p}" for p in blank_volatile(got, want, parts)]
        if not same_value(value_of(got), value_of(want), strict_types=False):
            problems.append(f"{key}: value\n  got  {value_of(got)}\n  want {value_of(want)}")
    for key in example.get("absent_keys", []):
        if raw.exists(key):
            problems.append(f"{key}: present, must be absent")
    for got_message, want_message in zip(got_published, published, strict=False):
        event_volatile = [p for p in example.get("volatile", []) if p.endswith(".timestamp")]
        want_json = dict(want_message["json"])
        got_json = dict(got_message["json"])
        if event_volatile:
            parse_time(got_json.pop("timestamp"))
            want_json.pop("timestamp")
        if got_message["channel"] != want_message["channel"] or not same_value(got_json, want_json, strict_types=False):
            problems.append(f"published {got_message}, want {want_message}")
    if len(got_published) != len(published):
        problems.append(f"published {len(got_published)} messages, want {len(published)}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
