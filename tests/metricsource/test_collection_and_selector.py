"""``collection.retryAttempts`` (absent 3, explicit 0 kept) and ``labelSelector: null`` (no selector)."""

from __future__ import annotations

from typing import Any

import pytest
from clusterpulse_metricsource.compiler import compile_metric_source
from clusterpulse_metricsource.crd import METRIC_SOURCE


def source(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "source": {"apiVersion": "v1", "kind": "Pod"},
        "fields": [{"name": "phase", "path": ".status.phase"}],
        "rbac": {"resourceTypeName": "pods"},
    }
    base.update(spec)
    return {"metadata": {"name": "s", "namespace": "ns"}, "spec": base}


@pytest.mark.parametrize(
    ("collection", "retries"),
    [
        (None, 3),
        ({}, 3),
        ({"retryAttempts": 0}, 0),
        ({"retryAttempts": 5}, 5),
        ({"retryAttempts": -1}, 3),
    ],
)
def test_retry_attempts(collection: dict[str, Any] | None, retries: int) -> None:
    spec = {} if collection is None else {"collection": collection}
    assert compile_metric_source(source(**spec)).compiled.collection.retry_attempts == retries


def test_explicit_zero_retries_hashes_like_go_omitempty() -> None:
    zero = compile_metric_source(source(collection={"retryAttempts": 0})).compiled
    absent = compile_metric_source(source(collection={})).compiled
    three = compile_metric_source(source(collection={"retryAttempts": 3})).compiled
    assert zero.hash == absent.hash != three.hash
    assert (zero.collection.retry_attempts, absent.collection.retry_attempts) == (0, 3)


def test_zero_retries_survive_crd_defaulting() -> None:
    # The CRD's default (3) applies only when the field is absent (docs/compatibility.md#r5).
    obj = METRIC_SOURCE.with_defaults(source(collection={"retryAttempts": 0}))
    assert obj["spec"]["collection"]["retryAttempts"] == 0
    assert compile_metric_source(obj).compiled.collection.retry_attempts == 0
    defaulted = METRIC_SOURCE.with_defaults(source())
    assert "collection" not in defaulted["spec"]  # no object default: nothing to fill in
    assert defaulted["spec"]["rbac"]["filterAggregations"] is True


@pytest.mark.parametrize("selector", [None, {}, {"matchLabels": None, "matchExpressions": None}])
def test_null_or_empty_label_selector_means_no_selector(selector: Any) -> None:
    obj = source(source={"apiVersion": "v1", "kind": "Pod", "labelSelector": selector})
    assert compile_metric_source(obj).compiled.source.label_selector == ""
    assert compile_metric_source(METRIC_SOURCE.with_defaults(obj)).compiled.source.label_selector == ""


def test_a_label_selector_still_selects() -> None:
    obj = source(source={"apiVersion": "v1", "kind": "Pod", "labelSelector": {"matchLabels": {"app": "web"}}})
    assert compile_metric_source(obj).compiled.source.label_selector == "app=web"
