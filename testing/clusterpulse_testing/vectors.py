"""Loading the shared reference vectors for data-driven tests.

Conventions for every vector test in the project:

* decorate it with :func:`vector_test` (it marks the test ``@pytest.mark.vectors(file, group)``
  and parametrizes it over every case of the group);
* the files come from the repository's copy in ``tests/vectors`` (refreshed from the project's
  shared reference folder with ``scripts/sync_vectors.py``), nowhere else by default. Overrides:
  ``$CLUSTERPULSE_SHARED`` reads ``$CLUSTERPULSE_SHARED/vectors`` instead, and
  ``$CLUSTERPULSE_UTILS_VECTORS`` / ``$CLUSTERPULSE_METRICSOURCE_VECTORS`` /
  ``$CLUSTERPULSE_REDIS_VECTORS`` name one file each (same schema, other cases);
* every group of every file is either run by a test or listed, with the reason, in
  ``tests/vectors_pending.txt`` (checked by ``tests/test_vectors_coverage.py``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from clusterpulse_model import ClusterMetrics, cluster_health

from clusterpulse_core.serde import structure

F = TypeVar("F", bound=Callable[..., Any])

#: Vector file key -> (environment override, public file name).
FILES = {
    "utils": ("CLUSTERPULSE_UTILS_VECTORS", "utils_public.json"),
    "metricsource": ("CLUSTERPULSE_METRICSOURCE_VECTORS", "metricsource_public.json"),
    "redis": ("CLUSTERPULSE_REDIS_VECTORS", "redis_examples.json"),
}


#: The repository's copy of the public vectors (a source checkout: ``<repo>/tests/vectors``).
REPOSITORY_VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"


def shared_vectors_dir() -> Path:
    """The folder of the public vector files: ``tests/vectors``, or ``$CLUSTERPULSE_SHARED/vectors``.

    Only the repository is searched: a ``shared/`` folder elsewhere on disk is never picked up.
    """
    if os.environ.get("CLUSTERPULSE_SHARED"):
        return Path(os.environ["CLUSTERPULSE_SHARED"]) / "vectors"
    if REPOSITORY_VECTORS.is_dir():
        return REPOSITORY_VECTORS
    raise FileNotFoundError(
        f"{REPOSITORY_VECTORS} not found (the vectors ship with a source checkout, not the wheel); "
        "set CLUSTERPULSE_SHARED to a folder holding vectors/, or CLUSTERPULSE_UTILS_VECTORS / "
        "CLUSTERPULSE_METRICSOURCE_VECTORS / CLUSTERPULSE_REDIS_VECTORS to the files"
    )


def vector_file(file: str) -> Path:
    """The path of vector file ``file`` (``utils``, ``metricsource`` or ``redis``)."""
    env, public = FILES[file]
    override = os.environ.get(env)
    return Path(override) if override else shared_vectors_dir() / public


@cache
def load(file: str) -> dict[str, Any]:
    """The parsed vector file."""
    data: dict[str, Any] = json.loads(vector_file(file).read_text())
    return data


def groups(file: str) -> dict[str, list[Any]]:
    """Group name -> cases (``groups`` in utils, ``categories`` in metricsource, ``examples`` by id)."""
    data = load(file)
    if "groups" in data:
        return dict(data["groups"])
    if "categories" in data:
        return dict(data["categories"])
    return {"examples": list(data["examples"])}


def cases(file: str, group: str) -> list[Any]:
    """Every case of one group (empty when the file lacks the group)."""
    return list(groups(file).get(group, []))


def _case_id(index: int, case: Any) -> str:
    if isinstance(case, dict):
        for key in ("id", "note", "name"):
            if isinstance(case.get(key), str):
                return f"{index}-{case[key]}"[:80]
    return str(index)


def vector_test(file: str, group: str, argname: str = "case") -> Callable[[F], F]:
    """Mark a test as running vector group ``group`` of ``file`` and parametrize it over the cases."""
    group_cases = cases(file, group)
    params = [pytest.param(c, id=_case_id(i, c)) for i, c in enumerate(group_cases)]

    def decorate(fn: F) -> F:
        fn = pytest.mark.parametrize(argname, params)(fn)
        return cast(F, pytest.mark.vectors(file, group)(fn))

    return decorate


def decode_value(value: Any) -> Any:
    """Undo the vectors' value encoding: ``{"$float": "NaN"}`` and friends become floats."""
    if isinstance(value, dict):
        if set(value) == {"$float"}:
            return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[value["$float"]])
        return {k: decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value


def floats_equal(got: float, want: float) -> bool:
    """The vectors' float comparison: NaN equals NaN, same infinities, else 1e-9 relative."""
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return abs(got - want) <= 1e-9 * max(1.0, abs(want))


def same_value(got: Any, want: Any, *, strict_types: bool = True) -> bool:
    """Deep equality as the vectors define it: int and float differ when ``strict_types``."""
    want = decode_value(want)
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, float):
        if strict_types and not isinstance(got, float):
            return False
        return isinstance(got, int | float) and floats_equal(float(got), want)
    if isinstance(want, int):
        if strict_types and not isinstance(got, int):
            return False
        return isinstance(got, int | float) and got == want
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and set(got) == set(want)
            and all(same_value(got[k], want[k], strict_types=strict_types) for k in want)
        )
    if isinstance(want, list):
        return (
            isinstance(got, list | tuple)
            and len(got) == len(want)
            and all(same_value(g, w, strict_types=strict_types) for g, w in zip(got, want, strict=True))
        )
    return bool(got == want)


# The Redis examples describe the Go controller's keys as before docs/compatibility.md#r1–#r3, #r6 (added after
# running the readers on our Redis). These helpers adapt an example to those decisions, and
# leave an example that already follows them unchanged.

#: The fields docs/compatibility.md#r1 adds to ``cluster:<c>:metrics`` beyond the Go controller's nine, with the
#: value they hold when the stored ClusterMetrics did not set them.
R1_ADDED_METRICS: dict[str, int | float] = {
    "nodes_not_ready": 0,
    "pods_pending": 0,
    "pods_failed": 0,
    "cpu_allocatable": 0.0,
    "cpu_requested": 0.0,
    "cpu_usage_percent": 0.0,
    "memory_allocatable": 0,
    "memory_requested": 0,
    "memory_usage_percent": 0.0,
    "storage_capacity": 0,
    "storage_used": 0,
    "pvcs": 0,
    "services": 0,
    "statefulsets": 0,
    "daemonsets": 0,
}
#: The R3 resource-collection keys (per cluster) a pull reconcile now writes.
R3_KEYS = ("pods", "deployments", "services", "statefulsets", "daemonsets", "resource_metadata")


def _is_metrics_key(key: str) -> bool:
    return key.startswith("cluster:") and key.endswith(":metrics") and ":node:" not in key


def _health_decision(example: dict[str, Any]) -> None:
    """R7 in a reconcile example: the status says the health its metrics give, the event the counts."""
    keys = example.get("keys", {})
    for key, want in keys.items():
        if not (key.startswith("cluster:") and key.endswith(":metrics") and ":node:" not in key):
            continue
        cluster = key.split(":")[1]
        metrics = structure(want.get("json") or {}, ClusterMetrics)
        verdict = cluster_health(metrics)
        status = (keys.get(f"cluster:{cluster}:status") or {}).get("json")
        if isinstance(status, dict) and status.get("message") == "Cluster is reachable":
            status.update(health=verdict.health, message=verdict.message)
        counts = {
            "health": verdict.health,
            "nodes": metrics.nodes,
            "nodes_ready": metrics.nodes_ready,
            "namespaces": metrics.namespaces,
        }
        events = [
            *(keys.get(f"events:{cluster}") or {}).get("items", ()),
            *(p.get("json") for p in example.get("published", ())),
        ]
        for event in events:
            if (
                isinstance(event, dict)
                and event.get("type") == "cluster.reconciled"
                and event.get("cluster") == cluster
                and isinstance(event.get("data"), dict)
            ):
                event["data"].update(counts)


def with_reader_decisions(
    example: dict[str, Any],
    creation_timestamp: str | None = None,
    metrics_from: Callable[[str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``example`` with the expectations docs/compatibility.md#r1, #r3, #r6, #r7 add (a deep copy).

    Metrics values gain the R1 fields (``metrics_from(key)`` supplies them when given, else
    the zeros of :data:`R1_ADDED_METRICS`), node values gain ``creation_timestamp`` when it is
    known, and in a reconcile example the R3 keys leave ``absent_keys`` (a reconcile writes them now).
    """
    adapted: dict[str, Any] = json.loads(json.dumps(example))
    for key, want in adapted.get("keys", {}).items():
        if _is_metrics_key(key) and isinstance(want.get("json"), dict):
            added = metrics_from(key) if metrics_from else R1_ADDED_METRICS
            for field, value in added.items():
                want["json"].setdefault(field, value)
        current = (want.get("fields") or {}).get("current")
        # An unknown creation time (None) is left out of the node value.
        if (
            creation_timestamp is not None
            and key.count(":node:") == 1
            and not key.endswith(":metrics")
            and isinstance(current, dict)
        ):
            current["json"].setdefault("creation_timestamp", creation_timestamp)
    if any(op.get("op") == "reconcile_cluster_connection" for op in adapted.get("operations", ())):
        _health_decision(adapted)
        adapted["absent_keys"] = [
            key
            for key in adapted.get("absent_keys", [])
            if not (key.startswith("cluster:") and key.rsplit(":", 1)[-1] in R3_KEYS)
        ]
    return adapted
