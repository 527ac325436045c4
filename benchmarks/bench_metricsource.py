"""MetricSource throughput: raw list pages -> records -> aggregation results.

One MetricSource (5 fields incl. a quantity, 3 computed fields, 6 aggregations with a filter
and a groupBy) over 10,000 and 100,000 pod-shaped objects, from the raw page bytes (500 per
page, as a list call returns them) to the aggregation results. Printed next to, in the same
run, (a) ``json.loads`` of the same bytes alone and (b) the ``kubernetes`` client's model
deserialisation (``ApiClient().deserialize`` into ``V1PodList``) of a 2,000-object sample of
the same pages, extrapolated. Peak RSS for 100,000 objects is measured in a child process that
produces each page only when it is needed, as a paginated list call would.

    .venv/bin/python benchmarks/bench_metricsource.py
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

PAGE_SIZE = 500
SIZES = (10_000, 100_000)
K8S_SAMPLE = 2_000

METRIC_SOURCE: dict[str, Any] = {
    "metadata": {"name": "pods", "namespace": "clusterpulse"},
    "spec": {
        "source": {"apiVersion": "v1", "kind": "Pod"},
        "fields": [
            {"name": "namespace", "path": ".metadata.namespace"},
            {"name": "phase", "path": ".status.phase"},
            {"name": "node", "path": ".spec.nodeName"},
            {"name": "cpu", "path": ".spec.containers[0].resources.requests.cpu", "type": "quantity"},
            {"name": "restarts", "path": ".status.containerStatuses[0].restartCount", "type": "integer"},
        ],
        "computed": [
            {"name": "millicores", "expression": "round(cpu * 1000, 0)"},
            {"name": "restarted", "expression": "restarts > 0", "type": "boolean"},
            {"name": "where", "expression": "concat(namespace, '/', node)", "type": "string"},
        ],
        "aggregations": [
            {"name": "pods", "function": "count"},
            {
                "name": "running",
                "function": "count",
                "filter": {"field": "phase", "operator": "equals", "value": "Running"},
            },
            {"name": "cpuByNode", "field": "cpu", "function": "sum", "groupBy": "node"},
            {"name": "avgRestarts", "field": "restarts", "function": "avg"},
            {"name": "p90Millicores", "field": "millicores", "function": "percentile", "percentile": 90},
            {"name": "nodes", "field": "node", "function": "distinct"},
        ],
    },
}


def pod(i: int) -> dict[str, Any]:
    """A pod as the API server returns it (managedFields, env, probes, conditions...)."""
    ns = f"team-{i % 40}"
    name = f"web-{i:07d}-abcde"
    container = {
        "name": "web",
        "image": "registry.example.com/team/web:1.25.3",
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": f"VAR_{k}", "value": f"value-{k}-{i}"} for k in range(6)],
        "resources": {
            "requests": {"cpu": f"{(i % 8 + 1) * 125}m", "memory": "256Mi"},
            "limits": {"cpu": "2", "memory": "1Gi"},
        },
        "volumeMounts": [
            {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
    }
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"6f1c2d3e-{i:08x}-4a5b-8c9d-0e1f2a3b4c5d",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": "2024-05-01T12:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "5d9f7c6b8", "team": ns},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-01T11:59:00Z"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-5d9f7c6b8",
                    "uid": "0a1b2c3d-0000-4000-8000-000000000000",
                    "controller": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-05-01T12:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}}}},
                    },
                }
            ],
        },
        "spec": {
            "containers": [container, {**container, "name": "sidecar", "env": []}],
            "nodeName": f"node-{i % 25}",
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]},
                }
            ],
        },
        "status": {
            "phase": "Running" if i % 10 else "Pending",
            "hostIP": "10.0.0.1",
            "podIP": f"10.1.{i % 250}.{i % 200}",
            "startTime": "2024-05-01T12:00:01Z",
            "qosClass": "Burstable",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2024-05-01T12:00:05Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "web",
                    "ready": True,
                    "restartCount": i % 4,
                    "started": True,
                    "image": "registry.example.com/team/web:1.25.3",
                    "imageID": "registry.example.com/team/web@sha256:" + "ab" * 32,
                    "containerID": "containerd://" + "cd" * 32,
                    "state": {"running": {"startedAt": "2024-05-01T12:00:04Z"}},
                }
            ],
        },
    }


def pages(count: int) -> Iterator[bytes]:
    """List pages of ``count`` pods, ``PAGE_SIZE`` per page, with continue tokens."""
    for start in range(0, count, PAGE_SIZE):
        stop = min(count, start + PAGE_SIZE)
        token = f"page-{stop}" if stop < count else ""
        yield json.dumps(
            {
                "apiVersion": "v1",
                "kind": "PodList",
                "metadata": {"resourceVersion": "1", "continue": token},
                "items": [pod(i) for i in range(start, stop)],
            }
        ).encode()


def make_collector() -> Any:
    """The compiled MetricSource's collector (compiled once, as the reconciler does)."""
    from clusterpulse_metricsource.collector import ClusterCollector
    from clusterpulse_metricsource.compiler import compile_metric_source

    return ClusterCollector(compile_metric_source(METRIC_SOURCE))


def end_to_end(collector: Any, page_bytes: Iterator[bytes] | list[bytes]) -> tuple[int, dict[str, Any]]:
    """Pages -> records -> aggregation results, as the collector does it."""
    records = []
    for body in page_bytes:
        records.extend(collector.records_of_page(body))
    return len(records), collector.program.aggregate(records)


def json_loads_only(page_bytes: list[bytes]) -> int:
    """Comparison (a): ``json.loads`` of every page and nothing else."""
    return sum(len(json.loads(body)["items"]) for body in page_bytes)


def kubernetes_models(page_bytes: list[bytes]) -> int:
    """Comparison (b): the ``kubernetes`` client's model deserialisation into ``V1PodList``."""
    from kubernetes.client import ApiClient

    api = ApiClient()
    return sum(len(api.deserialize(body.decode(), "V1PodList", "application/json").items) for body in page_bytes)


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    gc.collect()
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


def _high_water_mib() -> float:
    """This process's peak resident set (``VmHWM``; ``ru_maxrss`` would include the parent's at fork)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_child(count: int) -> None:
    """Child process: run end to end over lazily produced pages and print the peak RSS in MiB."""
    collector = make_collector()
    baseline = _high_water_mib()
    collected, _ = end_to_end(collector, pages(count))
    print(json.dumps({"objects": collected, "baseline_mib": baseline, "peak_mib": _high_water_mib()}))


def main() -> None:
    child = subprocess.run(
        [sys.executable, __file__, "--rss", str(SIZES[-1])], capture_output=True, text=True, check=True
    )
    rss = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"MetricSource benchmark: {PAGE_SIZE} objects per page; resources/s (higher is better)")
    collector = make_collector()
    end_to_end(collector, list(pages(PAGE_SIZE)))  # warm-up: first-call costs are not per object
    for count in SIZES:
        page_bytes = list(pages(count))
        megabytes = sum(len(b) for b in page_bytes) / 2**20
        e2e_s, (collected, results) = timed(end_to_end, collector, page_bytes)
        loads_s, loaded = timed(json_loads_only, page_bytes)
        sample = page_bytes[: K8S_SAMPLE // PAGE_SIZE]
        k8s_s, k8s_n = timed(kubernetes_models, sample)
        k8s_rate = k8s_n / k8s_s
        assert collected == loaded == count and results["pods"] == float(count)
        print(f"\n{count:,} pods ({megabytes:.0f} MiB of list JSON, {len(page_bytes)} pages)")
        print(f"  end to end (pages -> records -> 6 aggregations): {count / e2e_s:>12,.0f} /s  ({e2e_s:.2f} s)")
        print(
            f"  (a) json.loads of the same bytes alone:          {count / loads_s:>12,.0f} /s  ({loads_s:.2f} s)"
            f"   end to end / (a) = {loads_s / e2e_s:.2f}x"
        )
        print(
            f"  (b) kubernetes V1PodList deserialisation:         {k8s_rate:>12,.0f} /s  "
            f"(measured on {k8s_n:,}, extrapolated)   end to end / (b) = {(count / e2e_s) / k8s_rate:.1f}x"
        )
        del page_bytes, sample
    print(
        f"\npeak RSS, {rss['objects']:,} objects end to end (pages produced one at a time): "
        f"{rss['peak_mib']:.0f} MiB (interpreter + imports before the run: {rss['baseline_mib']:.0f} MiB)"
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rss":
        peak_rss_child(int(sys.argv[2]))
    else:
        main()
