"""Against a real victoria-metrics: every series, label, value and timestamp; outages; overflow."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from clusterpulse_vmwriter import VMSettings, VMWriterBackend

from clusterpulse_core.kube.client import KubeClient, make_api_client
from clusterpulse_core.runtime.bootstrap import build_runtime, load, start_plugins, stop_plugins

CLUSTER = "prod-eu"
SOURCE = "monitoring/pvc-usage"
#: Samples of one reconcile_pieces() with 2 nodes.
RECONCILE_SAMPLES = 2 * 17 + 8 + 2 + 4 + 2
NODE_VALUES = {
    "clusterpulse_node_memory_usage_percent": 42.5,
    "clusterpulse_node_pods_running": 10,
    "clusterpulse_node_cpu_capacity": 16,
    "clusterpulse_node_memory_capacity_bytes": 68719476736,
    "clusterpulse_node_storage_capacity_bytes": 107374182400,
    "clusterpulse_node_pods_capacity": 110,
    "clusterpulse_node_cpu_allocatable": 15.5,
    "clusterpulse_node_memory_allocatable_bytes": 66571993088,
    "clusterpulse_node_storage_allocatable_bytes": 96636764160,
    "clusterpulse_node_pods_allocatable": 109,
    "clusterpulse_node_cpu_requested": 1.75,
    "clusterpulse_node_memory_requested_bytes": 4294967296,
    "clusterpulse_node_pods_pending": 1,
    "clusterpulse_node_pods_failed": 0,
    "clusterpulse_node_pods_succeeded": 1,
}


def key(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted(labels.items()))


def expected_reconcile(cluster: str, ts: int, **extra: str) -> dict[Any, dict[int, float]]:
    """Every series one reconcile_pieces(cluster, nodes=2) writes, with its one sample."""
    series: dict[Any, float] = {}
    for index in range(2):
        node = {"cluster": cluster, "node": f"worker-{index}", **extra}
        series[key("clusterpulse_node_cpu_usage_percent", **node)] = 11.290322580645162 + index
        series[key("clusterpulse_node_pods_total", **node)] = 12 + index
        series.update({key(name, **node): value for name, value in NODE_VALUES.items()})
    totals = {
        "nodes_total": 3,
        "nodes_ready": 2,
        "pods_total": 36,
        "pods_running": 30,
        "cpu_capacity": 48,
        "memory_capacity_bytes": 206158430208,
        "namespaces_total": 7,
        "deployments_total": 9,
        "operators_total": 2,
        "operators_count": 1,
    }
    series.update(
        {key(f"clusterpulse_cluster_{name}", cluster=cluster, **extra): value for name, value in totals.items()}
    )
    for operator in ("cert-manager.v1.12.0", "etcd.v0.9.4"):
        series[key("clusterpulse_operator_installed", cluster=cluster, operator=operator, **extra)] = 1
    flags = {"available": 1, "progressing": 0, "degraded": 1, "upgradeable": 0}
    series.update(
        {
            key(f"clusterpulse_cluster_operator_{flag}", cluster=cluster, operator="dns", **extra): value
            for flag, value in flags.items()
        }
    )
    return {name: {ts: float(value)} for name, value in series.items()}


def expected_aggregation(cluster: str, source: str, ts: int) -> dict[Any, dict[int, float]]:
    """Every series aggregation_piece() writes: numbers, bools as 0/1, one series per numeric group."""
    labels = {"cluster": cluster, "source": source}
    series = {
        key("clusterpulse_custom_resource_total_cpu", **labels): 8.5,
        key("clusterpulse_custom_resource_count", **labels): 3,
        key("clusterpulse_custom_resource_all_ready", **labels): 1,
        key("clusterpulse_custom_resource_by_phase", group="Running", **labels): 2,
        key("clusterpulse_custom_resource_by_phase", group="Pending", **labels): 1,
        key("clusterpulse_custom_resource_by_phase", group='we"ird\\key\n', **labels): 4,
    }
    return {name: {ts: float(value)} for name, value in series.items()}


def assert_same_samples(got: dict[Any, dict[int, float]], want: dict[Any, dict[int, float]]) -> None:
    """Same series and timestamps; values equal to VictoriaMetrics' storage precision (12 digits)."""
    assert set(got) == set(want)
    for series, points in want.items():
        assert set(got[series]) == set(points), series
        for ts, value in points.items():
            assert math.isclose(got[series][ts], value, rel_tol=1e-11), (series, got[series][ts], value)


def writer(url: str, **overrides: Any) -> VMWriterBackend:
    options: dict[str, Any] = {"retry_backoff": 0.05, "retry_backoff_max": 0.2, "flush_timeout": 10.0}
    return VMWriterBackend(VMSettings(endpoint=url, enabled=True, **{**options, **overrides}))


def counter(backend: VMWriterBackend, name: str) -> float:
    value = backend.metrics.registry.get_sample_value(name)
    assert value is not None
    return value


def test_reconcile_and_metricsource_result_arrive_exactly(vm: Any, pieces: Any) -> None:
    collected, computed = pieces.at(5), pieces.at(4)
    backend = writer(vm.url)
    backend.store(pieces.reconcile(CLUSTER, collected))
    backend.store([pieces.aggregation(CLUSTER, SOURCE, computed)])
    assert backend.flush(10)
    backend.close()

    expected = expected_reconcile(CLUSTER, pieces.ms(collected))
    # Operator pieces carry no collection time: they are stamped when stored.
    received = {name: points for name, points in vm.export().items() if "operator" in name[0]}
    stamp = next(iter(next(iter(received.values()))))
    assert pieces.ms(collected) < stamp
    for name in expected:
        if "operator" in name[0]:
            expected[name] = {stamp: next(iter(expected[name].values()))}
    expected.update(expected_aggregation(CLUSTER, SOURCE, pieces.ms(computed)))
    assert_same_samples(vm.export(), expected)
    assert counter(backend, "clusterpulse_vm_samples_written_total") == RECONCILE_SAMPLES + 6
    assert counter(backend, "clusterpulse_vm_dropped_samples_total") == 0


def test_an_outage_of_several_cycles_loses_nothing(vm: Any, pieces: Any) -> None:
    times = [pieces.at(10 - cycle) for cycle in range(5)]
    backend = writer(vm.url)
    backend.store([pieces.aggregation(CLUSTER, SOURCE, times[0])])
    assert backend.flush(10)
    vm.stop()
    for when in times[1:]:
        backend.store([pieces.aggregation(CLUSTER, SOURCE, when)])
    assert not backend.flush(0.3)  # nothing can be delivered while it is down
    assert counter(backend, "clusterpulse_vm_queue_batches") == 4
    vm.start()
    assert backend.flush(20)
    backend.close()
    stamps = {pieces.ms(when) for when in times}
    exported = vm.export()
    assert set(exported) == set(expected_aggregation(CLUSTER, SOURCE, 0))
    assert all(set(points) == stamps for points in exported.values())
    assert counter(backend, "clusterpulse_vm_dropped_samples_total") == 0
    assert counter(backend, "clusterpulse_vm_samples_written_total") == 5 * 6


def test_queue_overflow_drops_the_oldest_cycles_and_counts_them(vm: Any, pieces: Any) -> None:
    times = [pieces.at(10 - cycle) for cycle in range(5)]
    vm.stop()
    backend = writer(vm.url, queue_cycles=3)
    for when in times:
        backend.store(pieces.reconcile(CLUSTER, when))
        backend.store([pieces.aggregation(CLUSTER, SOURCE, when)])
    assert counter(backend, "clusterpulse_vm_queue_batches") == 6
    assert counter(backend, "clusterpulse_vm_dropped_samples_total") == 2 * (RECONCILE_SAMPLES + 6)
    vm.start()
    assert backend.flush(20)
    backend.close()
    kept = {pieces.ms(when) for when in times[2:]}
    exported = vm.export()
    node_series = exported[key("clusterpulse_node_pods_capacity", cluster=CLUSTER, node="worker-1")]
    assert set(node_series) == kept
    assert set(exported[key("clusterpulse_custom_resource_count", cluster=CLUSTER, source=SOURCE)]) == kept
    assert counter(backend, "clusterpulse_vm_samples_written_total") == 3 * (RECONCILE_SAMPLES + 6)


def test_basic_auth_and_gzip_against_victoria_metrics(victoria_metrics: Any, pieces: Any) -> None:
    vm = victoria_metrics(username="writer", password="s3cret")
    when = pieces.at(2)
    wrong = writer(vm.url, username="writer", password="nope", flush_timeout=0.3)
    wrong.store([pieces.aggregation(CLUSTER, SOURCE, when)])
    wrong.close()
    assert counter(wrong, "clusterpulse_vm_dropped_samples_total") == 6
    assert vm.export() == {}

    right = writer(vm.url, username="writer", password="s3cret", compress_above=0)
    right.store([pieces.aggregation(CLUSTER, SOURCE, when)])
    right.close()
    assert_same_samples(vm.export(), expected_aggregation(CLUSTER, SOURCE, pieces.ms(when)))


def test_through_the_core_with_env_and_extra_labels(vm: Any, kube_api: Any, pieces: Any, tmp_path: Path) -> None:
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(
        '[clusterpulse]\nplugins = ["vmwriter"]\n\n[plugins.vmwriter]\nextra_labels = { region = "eu-1" }\n'
    )
    config, host = load(str(config_file), env={"VM_ENABLED": "true", "VM_ENDPOINT": vm.url + "///"})
    hub = KubeClient(make_api_client(kube_api().url))
    runtime = build_runtime(config, host, hub=hub)
    start_plugins(runtime)
    collected = pieces.at(1)
    runtime.store.put(*pieces.reconcile(CLUSTER, collected))
    stop_plugins(runtime)  # closes the backend: flushes what is queued

    exported = vm.export()
    assert len(exported) == RECONCILE_SAMPLES
    assert all(dict(labels)["region"] == "eu-1" and dict(labels)["cluster"] == CLUSTER for _, labels in exported)
    assert exported[key("clusterpulse_cluster_nodes_total", cluster=CLUSTER, region="eu-1")] == {
        pieces.ms(collected): 3.0
    }
    assert runtime.metrics.get_sample_value("clusterpulse_vm_samples_written_total") == RECONCILE_SAMPLES
    assert runtime.metrics.get_sample_value("clusterpulse_vm_queue_batches") == 0
