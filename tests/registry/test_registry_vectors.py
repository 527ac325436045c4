"""The registry_* groups of utils_public.json, run against the plugin's pure functions."""

from __future__ import annotations

from typing import Any

from clusterpulse_registry.detect import detect_headers
from clusterpulse_registry.endpoint import basic_auth_header, catalog_url, normalise_endpoint
from clusterpulse_registry.policy import classify_health, health_message, reconcile_interval, should_update_status
from clusterpulse_registry.resource import RegistryConnectionStatus
from clusterpulse_registry.result import HealthCheckResult
from clusterpulse_testing.vectors import same_value, vector_test

from clusterpulse_core import serde


@vector_test("utils", "registry_reconcile_interval")
def test_reconcile_interval(case: dict[str, Any]) -> None:
    assert same_value(reconcile_interval(case["spec_interval"]), case["out"])


@vector_test("utils", "registry_health")
def test_health(case: dict[str, Any]) -> None:
    assert classify_health(case["available"], case["response_time_ms"]) == case["out"]


@vector_test("utils", "registry_message")
def test_message(case: dict[str, Any]) -> None:
    result = HealthCheckResult(
        available=case["available"],
        response_time_ms=case["response_time_ms"],
        repository_count=case["repository_count"],
        error=case["error"],
    )
    assert health_message(case["health"], result) == case["out"]


@vector_test("utils", "registry_should_update_status")
def test_should_update_status(case: dict[str, Any]) -> None:
    old = serde.structure(case["status"], RegistryConnectionStatus)
    result = serde.structure(case["result"], HealthCheckResult)
    assert should_update_status(old, result, case["health"], case["message"]) is case["out"]


@vector_test("utils", "registry_endpoint_normalisation")
def test_endpoint_normalisation(case: dict[str, Any]) -> None:
    assert normalise_endpoint(case["in"]) == case["out"]


@vector_test("utils", "registry_basic_auth")
def test_basic_auth(case: dict[str, Any]) -> None:
    assert basic_auth_header(case["username"], case["password"]) == case["out"]


@vector_test("utils", "registry_catalog_url")
def test_catalog_url(case: dict[str, Any]) -> None:
    assert catalog_url(case["endpoint"], case["max"]) == case["out"]


@vector_test("utils", "registry_detect_headers")
def test_detect_headers(case: dict[str, Any]) -> None:
    facts = detect_headers(case["headers"])
    assert facts.version == case["version"]
    assert same_value(facts.features, case["features"])
