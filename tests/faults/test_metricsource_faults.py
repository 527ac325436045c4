"""MetricSource faults: a Secret source is refused, an unknown kind is an error naming the kind and
the cluster, a too-short interval is raised with a note, and Secret values never reach the logs."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from clusterpulse_metricsource.crd import METRIC_SOURCE
from clusterpulse_testing.polling import eventually
from fault_support import HUB_NAMESPACE, TOKEN, add_cluster, make_hub, managed_objects, secret, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import (
    Outcome,
    build_runtime,
    load,
    reconcile_object,
    start_plugins,
    stop_plugins,
)

PASSWORD = "hunter2-do-not-log"
MS_API = f"{METRIC_SOURCE.group}/{METRIC_SOURCE.version}"


def _source(api_version: str, kind: str, **collection: Any) -> dict[str, Any]:
    return {
        "source": {"apiVersion": api_version, "kind": kind, "scope": "Namespaced"},
        "fields": [{"name": "password", "path": ".data.password"}],
        **({"collection": collection} if collection else {}),
    }


class Fleet:
    """A hub with one Connected cluster holding a Secret, and a runtime from a config file."""

    def __init__(
        self,
        kube_api: Callable[..., Any],
        redis_url: str,
        tmp_path: Path,
        metricsource: Mapping[str, Any] | None = None,
    ) -> None:
        self.hub = make_hub(kube_api, METRIC_SOURCE)
        cluster = kube_api(
            objects=[
                *managed_objects("node-a"),
                {**secret("db", {"password": PASSWORD}), "metadata": {"name": "db", "namespace": "default"}},
            ],
            require_token=TOKEN,
        )
        add_cluster(self.hub, "east", cluster.url)
        config_file = write_config(
            tmp_path / "config.toml",
            redis_url,
            plugins={"metricsource": metricsource or {}},
            enabled=("redis", "cluster", "metricsource"),
        )
        config, host = load(str(config_file), env={})
        self.runtime = build_runtime(config, host, hub=KubeClient(self.hub.api_client()))
        start_plugins(self.runtime)
        owner, kind = self.runtime.plugins.kinds["ClusterConnection"]
        assert reconcile_object(
            self.runtime, owner, kind, self.hub.get(kind.api_version, kind.plural, "east", HUB_NAMESPACE)
        ).ok

    def reconcile(self, name: str, spec: Mapping[str, Any]) -> tuple[Outcome, dict[str, Any]]:
        self.hub.create(
            {
                "apiVersion": MS_API,
                "kind": "MetricSource",
                "metadata": {"name": name, "namespace": HUB_NAMESPACE},
                "spec": dict(spec),
            }
        )
        obj = self.hub.get(MS_API, METRIC_SOURCE.plural, name, HUB_NAMESPACE)
        outcome = reconcile_object(self.runtime, "metricsource", METRIC_SOURCE, obj)
        status = eventually(
            lambda: self.hub.get(MS_API, METRIC_SOURCE.plural, name, HUB_NAMESPACE).get("status"), "a status", 5
        )
        return outcome, dict(status)

    def close(self) -> None:
        stop_plugins(self.runtime)


@pytest.fixture
def make_fleet(kube_api: Callable[..., Any], redis_url: str, tmp_path: Path) -> Any:
    made: list[Fleet] = []

    def factory(**metricsource: Any) -> Fleet:
        made.append(Fleet(kube_api, redis_url, tmp_path, metricsource))
        return made[-1]

    yield factory
    for fleet in made:
        fleet.close()


def test_a_secret_source_is_refused_unless_allowed_and_never_logged(
    make_fleet: Callable[..., Fleet], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fleet = make_fleet()
    outcome, status = fleet.reconcile("passwords", _source("v1", "Secret"))
    print(f"\nv1/Secret source: phase {status['phase']}: {status['message']}")
    assert not outcome.ok
    assert status["phase"] == "Error"
    assert "v1/Secret is refused" in status["message"] and "allowed_source_kinds" in status["message"]

    outcome, status = fleet.reconcile("maps", _source("v1", "ConfigMap"))
    assert status["phase"] == "Active"
    fleet.close()

    denied = make_fleet(denied_source_kinds=["v1/ConfigMap"])
    _, status = denied.reconcile("maps", _source("v1", "ConfigMap"))
    assert status["phase"] == "Error" and "denied_source_kinds" in status["message"]

    allowed = make_fleet(allowed_source_kinds=["v1/Secret"])
    outcome, status = allowed.reconcile("passwords", _source("v1", "Secret"))
    assert status["phase"] == "Active", status
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert PASSWORD not in logged and encoded not in logged


def test_an_unknown_kind_is_an_error_naming_kind_and_cluster(make_fleet: Callable[..., Fleet]) -> None:
    fleet = make_fleet()
    outcome, status = fleet.reconcile("ghosts", _source("ghosts.example.io/v1", "Ghost"))
    print(f"\nunknown kind: phase {status['phase']}: {status['message']}")
    assert not outcome.ok
    assert status["phase"] == "Error"
    assert "ghosts.example.io/v1/Ghost" in status["message"] and "east" in status["message"]


def test_an_interval_below_30_seconds_is_raised_with_a_note(make_fleet: Callable[..., Fleet]) -> None:
    fleet = make_fleet()
    outcome, status = fleet.reconcile("fast", _source("v1", "ConfigMap", intervalSeconds=1))
    assert outcome.ok and outcome.requeue_after == 30
    assert "intervalSeconds 1 raised to the minimum 30" in status["message"]
