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
from typing import Any, TypeVar

import pytest

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
    return json.loads(vector_file(file).read_text())


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
        return pytest.mark.vectors(file, group)(fn)

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
        return (isinstance(got, dict) and set(got) == set(want)
                and all(same_value(got[k], want[k], strict_types=strict_types) for k in want))
    if isinstance(want, list):
        return (isinstance(got, list | tuple) and len(got) == len(want)
                and all(same_value(g, w, strict_types=strict_types) for g, w in zip(got, want, strict=True)))
    return bool(got == want)
