"""The Redis golden examples of the cluster operations, run end to end.

Each example's input becomes a managed-cluster emulator (and hub objects); a full reconcile
runs through the real bootstrap path and the ``redis`` plugin, and the keys are compared as
the reference's golden examples are compared: parsed JSON, numbers numerically, TTLs within a few seconds, sets as
sets. The plugin's clock is the examples' clock; values that come from the store's own
clock (``last_update``, scores, summary timestamps) only need to be valid times / numbers.

The managed cluster is served on ``http://127.0.0.1:<port>``, so the endpoint in the
example is replaced by the emulator URL in ``spec.endpoint``, ``info.api_url`` and
``info.console_url`` (an ``http://127.0.0.1`` endpoint derives to itself; the
``api.``-host derivation is covered by the ``console_url_derivation`` vectors).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
import three_node
from cluster_support import EXAMPLE_CLOCK, Harness
from clusterpulse_cluster.info import derive_console_url
from clusterpulse_testing.kube_api import any_content_crd
from clusterpulse_testing.vectors import cases, with_reader_decisions

from clusterpulse_core.serde import loads, parse_time

CLOCK_TEXT = "2025-01-01T00:00:00Z"
CLOCK_UNIX = 1735689600
TTL_TOLERANCE = 5
OPS = ("reconcile_cluster_connection", "store_operators_from_olm", "store_cluster_operators_from_openshift")


def cluster_examples() -> list[Any]:
    """The examples whose operations this plugin performs."""
    found = [e for e in cases("redis", "examples") if all(op["op"] in OPS for op in e["operations"])]
    return [pytest.param(e, id=e["id"]) for e in found]


def numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def matches(got: Any, want: Any, where: str, problems: list[str]) -> None:
    """Compare as the reference's golden examples are compared; store-clock values only need the right format."""
    if isinstance(want, str) and want in (CLOCK_TEXT, CREATED):
        try:
            parse_time(got)
        except (TypeError, ValueError, AttributeError):
            problems.append(f"{where}: {got!r} is not a time")
        return
    if numeric(want):
        if not numeric(got) or (got != want and want != CLOCK_UNIX):
            problems.append(f"{where}: {got!r} != {want!r}")
        return
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            problems.append(f"{where}: keys {sorted(got) if isinstance(got, dict) else got!r} != {sorted(want)}")
            return
        for key in want:
            matches(got[key], want[key], f"{where}.{key}", problems)
        return
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            problems.append(f"{where}: {got!r} != {want!r}")
            return
        for index, (g, w) in enumerate(zip(got, want, strict=True)):
            matches(g, w, f"{where}[{index}]", problems)
        return
    if got != want:
        problems.append(f"{where}: {got!r} != {want!r}")


def read_key(client: redis.Redis, key: str, want: dict[str, Any]) -> dict[str, Any]:
    """The key in the example's layout."""
    kind = client.type(key).decode()
    got: dict[str, Any] = {"type": kind}
    if kind == "string":
        got["json"] = loads(client.get(key))
    elif kind == "hash":
        raw = {k.decode(): v.decode() for k, v in client.hgetall(key).items()}
        got["fields"] = {
            f: {"json": loads(v)} if isinstance(want.get("fields", {}).get(f), dict) else v for f, v in raw.items()
        }
    elif kind == "set":
        got["members"] = sorted(m.decode() for m in client.smembers(key))
    elif kind == "zset":
        got["members"] = [{"score": s, "json": loads(m)} for m, s in client.zrange(key, 0, -1, withscores=True)]
    elif kind == "list":
        got["items"] = [loads(item) for item in client.lrange(key, 0, -1)]
    return got


def substitute(value: Any, replacements: dict[str, str]) -> Any:
    """Replace whole string values (the example endpoint, creation times) by what the emulators serve."""
    if isinstance(value, str):
        return replacements.get(value, value)
    if isinstance(value, dict):
        return {k: substitute(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, replacements) for v in value]
    return value


def expand(entries: Any) -> list[dict[str, Any]]:
    """``"<42 entries>"`` stands for a list of that length."""
    if isinstance(entries, str):
        count = int(re.fullmatch(r"<(\d+) entries>", entries).group(1))  # type: ignore[union-attr]
        return [{"name": f"entry-{i}"} for i in range(count)]
    return list(entries or [])


def managed_objects(managed: dict[str, Any]) -> list[dict[str, Any]]:
    """The emulator objects of an example's ``managed_cluster``."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in managed["namespaces"]
    ]
    for node in managed["nodes"]:
        status = dict(
            node["status"],
            images=expand(node["status"].get("images")),
            volumesAttached=expand(node["status"].get("volumesAttached")),
        )
        objects.append({"apiVersion": "v1", "kind": "Node", **node, "status": status})
    for pod in managed["pods"]:
        objects.append(
            three_node.pod(pod["namespace"], pod["name"], pod["nodeName"], pod["phase"], list(pod["requests"]))
        )
    for ref in managed["deployments"]:
        namespace, name = ref.split("/")
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": name, "image": "x"}]},
                    },
                },
            }
        )
    return objects


def olm_objects(args: dict[str, Any]) -> list[dict[str, Any]]:
    """Subscriptions and CSVs of a ``store_operators_from_olm`` example."""
    objects = [
        any_content_crd("operators.coreos.com", "v1alpha1", kind, plural)
        for kind, plural in (("Subscription", "subscriptions"), ("ClusterServiceVersion", "clusterserviceversions"))
    ]
    namespaces = set()
    for index, pair in enumerate(args["subscriptions_and_csvs"]):
        sub, csv = pair["subscription"], pair["csv"]
        namespaces.add(sub["namespace"])
        objects.append(
            {
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "Subscription",
                "metadata": {"name": f"sub-{index}", "namespace": sub["namespace"]},
                "spec": sub.get("spec", {}),
                "status": sub.get("status", {}),
            }
        )
        objects.append({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", **csv})
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in sorted(namespaces)] + objects


def cluster_operator_objects(args: dict[str, Any]) -> list[dict[str, Any]]:
    """ClusterOperators of a ``store_cluster_operators_from_openshift`` example."""
    objects = [any_content_crd("config.openshift.io", "v1", "ClusterOperator", "clusteroperators", namespaced=False)]
    for name, status in args["clusteroperators_status"].items():
        objects.append(
            {
                "apiVersion": "config.openshift.io/v1",
                "kind": "ClusterOperator",
                "metadata": {"name": name},
                "status": status,
            }
        )
    return objects


def creation_times(api: Any, args: dict[str, Any]) -> dict[str, str]:
    """CSV name -> creationTimestamp as the emulator set it (an API server owns that field)."""
    times = {}
    for pair in args.get("subscriptions_and_csvs", ()):
        meta = pair["csv"]["metadata"]
        served = api.get("operators.coreos.com/v1alpha1", "clusterserviceversions", meta["name"], meta["namespace"])
        times[meta["creationTimestamp"]] = served["metadata"]["creationTimestamp"]
    return times


#: Stands for any valid time in the node values' ``creation_timestamp`` (the emulator sets it).
CREATED = "<created>"


def r1_metrics(example: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """The docs/compatibility.md#r1 totals of a reconcile example, worked out from its own node values and pods."""
    nodes = [
        want["fields"]["current"]["json"]
        for key, want in example["keys"].items()
        if key.count(":node:") == 1 and not key.endswith(":metrics")
    ]
    pods = (args.get("managed_cluster") or {}).get("pods", [])
    cpu_allocatable = sum((n["cpu_allocatable"] for n in nodes), 0.0)
    cpu_requested = sum((n["cpu_requested"] for n in nodes), 0.0)
    memory_allocatable = sum(n["memory_allocatable"] for n in nodes)
    memory_requested = sum(n["memory_requested"] for n in nodes)
    return {
        "nodes_not_ready": sum(1 for n in nodes if n["status"] != "Ready"),
        "pods_pending": sum(1 for p in pods if p["phase"] == "Pending"),
        "pods_failed": sum(1 for p in pods if p["phase"] == "Failed"),
        "cpu_allocatable": cpu_allocatable,
        "cpu_requested": cpu_requested,
        "cpu_usage_percent": cpu_requested / cpu_allocatable * 100 if cpu_allocatable else 0.0,
        "memory_allocatable": memory_allocatable,
        "memory_requested": memory_requested,
        "memory_usage_percent": memory_requested / memory_allocatable * 100 if memory_allocatable else 0.0,
        "storage_capacity": sum(n["storage_capacity"] for n in nodes),
        "storage_used": 0,
        "pvcs": 0,
        "services": 0,
        "statefulsets": 0,
        "daemonsets": 0,
    }


@pytest.mark.vectors("redis", "examples")
@pytest.mark.parametrize("example", cluster_examples())
def test_cluster_example(example: dict[str, Any], harness: Harness, kube_api: Callable[..., Any]) -> None:
    harness.clock.now = EXAMPLE_CLOCK
    [operation] = example["operations"]
    args = operation["args"]
    replacements: dict[str, str] = {}
    if operation["op"] == "reconcile_cluster_connection":
        cc = args["cluster_connection"]
        name, spec = cc["metadata"]["name"], dict(cc["spec"])
        managed_ca = ""
        if args["managed_cluster"] is not None:
            managed = kube_api(
                objects=managed_objects(args["managed_cluster"]),
                version=args["managed_cluster"]["version"],
                require_token="example-token",
            )
            replacements[spec["endpoint"]] = managed.url
            replacements[derive_console_url(spec["endpoint"])] = managed.url
            spec["endpoint"] = managed.url
            managed_ca = managed.ca_pem
        if args.get("secret_exists", True):
            ref = spec["credentialsRef"]
            harness.hub.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": ref["name"], "namespace": ref.get("namespace") or cc["metadata"]["namespace"]},
                    "stringData": {"token": "example-token", "ca.crt": managed_ca},
                }
            )
        harness.hub.create(
            {
                "apiVersion": "clusterpulse.io/v1alpha1",
                "kind": "ClusterConnection",
                "metadata": cc["metadata"],
                "spec": spec,
            }
        )
    else:
        name = args["cluster"]
        objects = olm_objects(args) if operation["op"] == "store_operators_from_olm" else cluster_operator_objects(args)
        managed = kube_api(objects=objects, require_token="example-token")
        replacements.update(creation_times(managed, args))
        harness.add(name, managed.url, token="example-token")
    pubsub = harness.redis.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe("cluster-events")
    pubsub.get_message(timeout=1.0)

    outcome = harness.reconcile(name)
    example = with_reader_decisions(
        example, creation_timestamp=CREATED, metrics_from=lambda key: r1_metrics(example, args)
    )

    expect_success = example["id"] != "cluster-reconcile-failure"
    assert outcome.ok is expect_success, outcome.detail
    problems: list[str] = []
    volatile = set(example.get("volatile", ()))
    for key, want in example["keys"].items():
        want = substitute(want, replacements)
        got = read_key(harness.redis, key, want)
        if got["type"] != want["type"]:
            problems.append(f"{key}: type {got['type']} != {want['type']}")
            continue
        ttl = harness.redis.ttl(key)
        if want["ttl"] is None:
            if ttl != -1:
                problems.append(f"{key}: ttl {ttl} != none")
        elif not want["ttl"]["seconds"] - TTL_TOLERANCE <= ttl <= want["ttl"]["seconds"]:
            problems.append(f"{key}: ttl {ttl} != {want['ttl']['seconds']}")
        for field in ("json", "fields", "members", "items"):
            if field in want:
                expected = want[field]
                if field == "json" and isinstance(expected, dict) and isinstance(got[field], dict):
                    # Volatile top-level fields (an error text): any non-empty string will do.
                    expected = {
                        k: got[field].get(k) if f"{key}.{k}" in volatile and got[field].get(k) else v
                        for k, v in expected.items()
                    }
                matches(got[field], expected, key, problems)
    for key in example.get("absent_keys", ()):
        if harness.redis.exists(key):
            problems.append(f"{key}: should be absent")
    published = []
    deadline = time.monotonic() + 2.0
    while len(published) < len(example.get("published", ())) and time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.2)
        if message is not None:
            published.append({"channel": message["channel"].decode(), "json": loads(message["data"])})
    pubsub.close()
    matches(published, example.get("published", published), "published", problems)
    assert problems == [], "\n".join(problems)
