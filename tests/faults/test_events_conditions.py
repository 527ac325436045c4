"""Kubernetes Events on the hub object for each state change (rate-limited), and a ``Ready``
condition beside phase and health: what ``kubectl describe`` and ``kubectl wait`` read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterpulse_metricsource.crd import METRIC_SOURCE
from fault_support import HUB_NAMESPACE, TOKEN, add_cluster, make_hub, managed_objects, write_config

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins


def _events(hub: Any) -> list[tuple[str, str, str]]:
    return [(e["involvedObject"]["name"], e["type"], e["reason"]) for e in hub.list("v1", "events", HUB_NAMESPACE)]


def test_state_changes_record_events_and_the_ready_condition(
    kube_api: Callable[..., Any], redis_url: str, tmp_path: Path
) -> None:
    hub = make_hub(kube_api, METRIC_SOURCE)
    cluster = kube_api(objects=managed_objects("node-a"), require_token=TOKEN)
    add_cluster(hub, "east", cluster.url)
    flaky = kube_api(objects=managed_objects("node-w"), require_token=TOKEN)
    add_cluster(hub, "west", flaky.url)
    config_file = write_config(tmp_path / "config.toml", redis_url, enabled=("redis", "cluster", "metricsource"))
    config, host = load(str(config_file), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client(), timeout=2.0))
    start_plugins(runtime)
    owner, kind = runtime.plugins.kinds["ClusterConnection"]

    def reconcile(name: str = "east") -> dict[str, Any]:
        reconcile_object(runtime, owner, kind, hub.get(kind.api_version, kind.plural, name, HUB_NAMESPACE))
        return dict(hub.get(kind.api_version, kind.plural, name, HUB_NAMESPACE)["status"])

    try:
        status = reconcile()
        [ready] = status["conditions"]
        assert (ready["type"], ready["status"], ready["reason"], ready["observedGeneration"]) == (
            "Ready",
            "True",
            "Connected",
            1,
        )
        assert _events(hub) == [("east", "Normal", "Connected")]
        assert reconcile()["conditions"][0]["lastTransitionTime"] == ready["lastTransitionTime"]

        cluster.stop()
        failed = reconcile()
        assert failed["phase"] == "Error"
        assert (failed["conditions"][0]["status"], failed["conditions"][0]["reason"]) == ("False", "ConnectionFailed")
        for _ in range(6):  # the same failure again and again, until the breaker opens
            failed = reconcile()
        assert "circuit breaker is open" in failed["message"]
        assert failed["conditions"][0]["reason"] == "CircuitOpen"
        events = _events(hub)
        print(f"\nevents: {events}")
        assert events.count(("east", "Warning", "ConnectionFailed")) == 1
        assert events.count(("east", "Warning", "CircuitOpen")) == 1

        reconcile("west")
        flaky.stop()
        down = reconcile("west")["conditions"][0]
        flaky.start()
        up = reconcile("west")["conditions"][0]
        assert (down["status"], up["status"], up["reason"]) == ("False", "True", "Connected")
        assert sorted(e for e in _events(hub) if e[0] == "west") == [
            ("west", "Normal", "Connected"),
            ("west", "Normal", "Recovered"),
            ("west", "Warning", "ConnectionFailed"),
        ]

        hub.create(
            {
                "apiVersion": f"{METRIC_SOURCE.group}/{METRIC_SOURCE.version}",
                "kind": "MetricSource",
                "metadata": {"name": "broken", "namespace": HUB_NAMESPACE},
                "spec": {"source": {"apiVersion": "v1", "kind": "Pod"}, "fields": []},
            }
        )
        ms = hub.get(f"{METRIC_SOURCE.group}/{METRIC_SOURCE.version}", "metricsources", "broken", HUB_NAMESPACE)
        assert not reconcile_object(runtime, "metricsource", METRIC_SOURCE, ms).ok
        assert ("broken", "Warning", "CompileError") in _events(hub)
    finally:
        stop_plugins(runtime)
