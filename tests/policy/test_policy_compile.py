"""Compiling MonitorAccessPolicy specs: every case of cases/compile.json, exact JSON and key order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_policy.compiler import CompileError, compile_policy, pattern_regex, spec_hash
from clusterpulse_policy.spec import SpecError, parse_spec

from clusterpulse_core.serde import dumps, loads, parse_time, unstructure

CASES = json.loads((Path(__file__).parent / "cases" / "compile.json").read_text())
NOW = parse_time(CASES["compiled_at"])


def _compile(case: dict[str, Any]) -> Any:
    obj = {
        "metadata": {"name": case.get("policy", "p"), "namespace": case.get("namespace", "ns")},
        "spec": case["spec"],
    }
    return compile_policy(obj["metadata"]["name"], obj["metadata"]["namespace"], parse_spec(obj), NOW)


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_compiled_data_is_exactly_the_expected_json(case: dict[str, Any]) -> None:
    compiled = _compile(case)
    expected = dict(case["expected"])
    assert expected.pop("hash") == "HASH"
    got = loads(dumps(compiled))
    assert len(got.pop("hash")) == 16
    assert got == expected
    assert list(got) == list(expected), "key order"
    assert json.dumps(got).count("null") == sum(1 for k in ("not_before", "not_after") if expected[k] is None)


@pytest.mark.parametrize("case", CASES["errors"], ids=[c["name"] for c in CASES["errors"]])
def test_every_invalid_input_is_refused_naming_its_field(case: dict[str, Any]) -> None:
    with pytest.raises((CompileError, SpecError)) as caught:
        _compile(case)
    message = str(caught.value)
    assert message.startswith(case["field"] + ":"), message
    assert case["contains"] in message, message


def test_the_hash_follows_the_spec_and_nothing_else() -> None:
    base = CASES["cases"][3]["spec"]
    obj = {"spec": base}
    first = spec_hash(parse_spec(obj))
    assert first == spec_hash(parse_spec({"spec": json.loads(json.dumps(base))}))
    assert all(c in "0123456789abcdef" for c in first)
    changed = json.loads(json.dumps(base))
    changed["identity"]["priority"] = 201
    assert spec_hash(parse_spec({"spec": changed})) != first
    reordered = {key: base[key] for key in reversed(list(base))}
    assert spec_hash(parse_spec({"spec": reordered})) == first


@pytest.mark.parametrize(
    ("text", "regex"),
    [
        ("prod-*", "^prod-.*$"),
        ("a?c", "^a.c$"),
        ("x.y*", "^x\\.y.*$"),
        ("*", "^.*$"),
        ("[ab]*", "^[ab].*$"),
    ],
)
def test_pattern_translation(text: str, regex: str) -> None:
    assert pattern_regex(text) == regex


def test_compiled_status_counts() -> None:
    from clusterpulse_model.policy import PolicyStatusRecord

    compiled = _compile(CASES["cases"][5])
    status = unstructure(PolicyStatusRecord.of(compiled, "Active", "Policy is active"))
    assert status == {
        "state": "Active",
        "message": "Policy is active",
        "compiledAt": "2025-01-01T00:00:00Z",
        "hash": compiled.hash,
        "affectedUsers": 0,
        "affectedGroups": 1,
        "affectedServiceAccounts": 0,
        "customResourceTypes": 2,
    }
