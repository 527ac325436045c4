"""One ClusterConnection reconcile of a 500-node, 10,000-pod, 2,000-service cluster served by the emulator.

Prints the CPU seconds of one reconcile cycle (``time.process_time`` of ``reconcile_object``;
the emulator runs in a subprocess so its CPU is not counted; Redis is a real redis-server)
and, measured in the same run on the same list payloads, the time to decode them with the
plugin's typed partial decoders and with plain ``json.loads``, and the ratios.

It also prints what the readers' data adds (docs/compatibility.md#r1, #r3), measured in the same run: the
cluster-wide counts (services, statefulsets, daemonsets, PVCs, deployments: ``limit=1`` lists
with ``remainingItemCount``), against counting by listing every service; and the capped resource
lists (their pods taken from the node pass's own pod sweep), as the difference between runs of
the nodes collector with and without them, and with cycles run with
``RESOURCE_COLLECTION_ENABLED=false``.

Target: <= 0.5 s CPU per cycle, everything included.

Then the same cycles with the ``alerts`` plugin enabled: the CPU its backend spends evaluating
the built-in rules after each reconcile (``time.thread_time`` around its ``store``, plus one
periodic re-evaluation), compared with the reconcile CPU without alerts. Target: < 5 %.

    .venv/bin/python benchmarks/bench_cluster_reconcile.py [--nodes 500] [--pods 10000] [--services 2000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_support import hub_objects, start_emulator
from clusterpulse_cluster.crd import CLUSTER_CONNECTION
from clusterpulse_cluster.inventory import COUNTED_PATHS, InventoryCollector
from clusterpulse_cluster.nodes import PodTally, tally_pods
from clusterpulse_cluster.resources import ResourceLists
from clusterpulse_cluster.settings import ClusterSettings
from clusterpulse_cluster.wire_types import node_list_decoder, pod_list_decoder
from clusterpulse_testing.servers import redis_process, require_binary

from clusterpulse_core.clock import utcnow
from clusterpulse_core.collect import ClusterTarget
from clusterpulse_core.kube.client import KubeClient, make_api_client
from clusterpulse_core.runtime.bootstrap import build_runtime, load, reconcile_object, start_plugins, stop_plugins

TARGET_CPU_SECONDS = 0.5
TARGET_ALERTS_SHARE = 0.05
NAMESPACE = "clusterpulse"
PAGE_SIZE = 500


def node(index: int) -> dict[str, Any]:
    """A realistic worker node (labels, conditions, 40 images)."""
    name = f"node-{index:04d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/worker": "",
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
                "node.kubernetes.io/instance-type": "m5.2xlarge",
            },
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": {"podCIDR": f"10.{index // 250}.{index % 250}.0/24", "providerID": f"aws:///zone/i-{index:017x}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32863432Ki", "ephemeral-storage": "125293548Ki", "pods": "110"},
            "allocatable": {"cpu": "7500m", "memory": "31715196Ki", "ephemeral-storage": "114396791822", "pods": "110"},
            "conditions": [
                {
                    "type": t,
                    "status": "False",
                    "lastHeartbeatTime": "2025-03-01T11:59:40Z",
                    "lastTransitionTime": "2024-09-12T08:15:10Z",
                    "reason": f"KubeletHasNo{t}",
                    "message": "ok",
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": "2025-03-01T11:59:40Z",
                    "lastTransitionTime": "2025-02-20T06:31:44Z",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kernelVersion": "5.14.0-284",
                "osImage": "RHCOS 4.14",
                "kubeletVersion": "v1.27.16",
                "containerRuntimeVersion": "cri-o://1.27.1",
                "architecture": "amd64",
                "operatingSystem": "linux",
                "machineID": f"{index:032x}",
            },
            "images": [
                {
                    "names": [f"quay.io/example/image-{i}@sha256:{i:064x}", f"quay.io/example/image-{i}:v1"],
                    "sizeBytes": 100_000_000 + i,
                }
                for i in range(40)
            ],
        },
    }


def pod(index: int, nodes: int) -> dict[str, Any]:
    """A realistic pod (owner, labels, two containers with env, probes and requests)."""
    name = f"app-{index % 400}-7d9c8b6f5-{index:05d}"
    namespace = f"team-{index % 40}"
    phase = ("Running",) * 8 + ("Pending", "Succeeded")
    containers = [
        {
            "name": c,
            "image": f"quay.io/example/{c}:1.{index % 7}",
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "env": [
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            ],
            "resources": {
                "requests": {"cpu": ("250m", "100m")[i], "memory": ("512Mi", "64Mi")[i]},
                "limits": {"cpu": "1", "memory": "1Gi"},
            },
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
            "volumeMounts": [
                {
                    "name": "kube-api-access",
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "readOnly": True,
                }
            ],
        }
        for i, c in enumerate(("app", "proxy"))
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": f"app-{index % 400}", "pod-template-hash": "7d9c8b6f5"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "controller": True,
                    "name": f"app-{index % 400}-7d9c8b6f5",
                    "uid": f"{index:032x}",
                }
            ],
        },
        "spec": {
            "nodeName": f"node-{index % nodes:04d}",
            "containers": containers,
            "serviceAccountName": "default",
            "restartPolicy": "Always",
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]},
                }
            ],
        },
        "status": {
            "phase": phase[index % len(phase)],
            "podIP": f"10.128.{index // 250}.{index % 250}",
            "startTime": "2025-02-20T06:40:00Z",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2025-02-20T06:40:00Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": c,
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": f"quay.io/example/{c}:1",
                    "imageID": f"sha256:{index:064x}",
                    "state": {"running": {"startedAt": "2025-02-20T06:40:05Z"}},
                }
                for c in ("app", "proxy")
            ],
        },
    }


def service(index: int) -> dict[str, Any]:
    """A ClusterIP service with labels, a selector and two ports."""
    name = f"svc-{index:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": f"team-{index % 40}",
            "labels": {"app": name, "tier": "web"},
            "annotations": {"service.beta.kubernetes.io/description": "bench service " * 4},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": f"172.30.{index // 250}.{index % 250}",
            "clusterIPs": [f"172.30.{index // 250}.{index % 250}"],
            "selector": {"app": name},
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
            ],
            "sessionAffinity": "None",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
        },
        "status": {"loadBalancer": {}},
    }


def write_objects(folder: Path, nodes: int, pods: int, services: int = 0) -> None:
    """The emulator's objects: the hub part (CRD, namespace, Secret, ClusterConnection) and the cluster."""
    hub = hub_objects(NAMESPACE, "big-token")
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i}"}} for i in range(40)]
    (folder / "hub.json").write_text(json.dumps({"kind": "List", "items": hub + namespaces}))
    (folder / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node(i) for i in range(nodes)]}))
    (folder / "pods.json").write_text(json.dumps({"kind": "List", "items": [pod(i, nodes) for i in range(pods)]}))
    (folder / "services.json").write_text(json.dumps({"kind": "List", "items": [service(i) for i in range(services)]}))


def decode_times(client: KubeClient, repeat: int = 3) -> tuple[float, float, int]:
    """Best-of-``repeat`` seconds to decode the node and pod pages typed (+tally) and with json.loads."""
    node_pages = list(client.list_pages("/api/v1/nodes", limit=PAGE_SIZE))
    pod_pages = list(client.list_pages("/api/v1/pods", limit=PAGE_SIZE))
    pages = node_pages + pod_pages
    typed, plain = [], []
    for _ in range(repeat):
        start = time.process_time()
        tallies: dict[str, PodTally] = {}
        for body in node_pages:
            node_list_decoder.decode(body)
        for body in pod_pages:
            tally_pods(pod_list_decoder.decode(body).items or (), tallies)
        typed.append(time.process_time() - start)
        start = time.process_time()
        for body in pages:
            json.loads(body)
        plain.append(time.process_time() - start)
    return min(typed), min(plain), sum(len(p) for p in pages)


def count_times(client: KubeClient, repeat: int = 5) -> tuple[float, float, int]:
    """Best-of CPU seconds of the R1 counts (``KubeClient.count`` of every counted kind) and of
    counting the services alone by listing them all (items decoded only to be counted)."""
    counted, listed = [], []
    services = 0
    for _ in range(repeat):
        start = time.process_time()
        for path in COUNTED_PATHS.values():
            client.count(path)
        counted.append(time.process_time() - start)
        start = time.process_time()
        services = sum(
            len(json.loads(body).get("items") or ()) for body in client.list_pages("/api/v1/services", limit=PAGE_SIZE)
        )
        listed.append(time.process_time() - start)
    return min(counted), min(listed), services


def collection_time(client: KubeClient, repeat: int = 5) -> tuple[float, float, int]:
    """Best-of CPU seconds of one run of the nodes collector with the R3 resource lists (default caps)
    and without them (runs alternated), and the lists' item count."""
    settings = ClusterSettings()
    with_lists = InventoryCollector(PAGE_SIZE, utcnow, resources=ResourceLists(settings, utcnow))
    without = InventoryCollector(PAGE_SIZE, utcnow)
    target = ClusterTarget("big", client.host, client)
    times: dict[bool, list[float]] = {True: [], False: []}
    items = 0
    for _ in range(repeat):
        for lists, collector in ((True, with_lists), (False, without)):
            start = time.process_time()
            pieces = collector(target)
            times[lists].append(time.process_time() - start)
            if lists:
                items = pieces[-1].collection.total_resources
    return min(times[True]), min(times[False]), items


class AlertsCost:
    """CPU the alerts backend spends in ``store`` (rule evaluation + storing alert pieces)."""

    def __init__(self) -> None:
        self.per_cycle: list[float] = []
        self.current = 0.0
        self.tick = 0.0


class Runner:
    """A runtime reconciling the big cluster, with or without the alerts plugin (``env``: overrides)."""

    def __init__(
        self, folder: Path, hub: KubeClient, redis_url: str, alerts: bool, env: Mapping[str, str] | None = None
    ) -> None:
        plugins = '["redis", "cluster", "alerts"]' if alerts else '["redis", "cluster"]'
        config_file = folder / f"clusterpulse-{'alerts' if alerts else 'plain'}-{len(env or {})}.toml"
        config_file.write_text(
            f'[clusterpulse]\nplugins = {plugins}\nnamespace = "{NAMESPACE}"\n'
            f'[plugins.redis]\nurl = "{redis_url}"\n'
            + ("[plugins.alerts]\nevaluation_interval = 3600.0\ndefault_for = 0.0\n" if alerts else "")
        )
        config, host = load(str(config_file), env=dict(env or {}))
        self.hub = hub
        self.runtime = build_runtime(config, host, hub=hub)
        self.runtime.pool.timeout = 120
        self.cycles: list[tuple[float, float]] = []
        self.cost = AlertsCost()
        self.backend: Any = next((b for b in self.runtime.store.backends if b.name == "alerts"), None)
        if self.backend is not None:
            original = self.backend.store
            cost = self.cost

            def timed_store(pieces: Any) -> None:
                start = time.thread_time()
                try:
                    original(pieces)
                finally:
                    cost.current += time.thread_time() - start

            self.backend.store = timed_store  # type: ignore[method-assign]  # timing wrapper
            start_plugins(self.runtime)

    def cycle(self) -> None:
        """One reconcile, timed."""
        obj = self.hub.get(CLUSTER_CONNECTION.api_path(NAMESPACE, "big"))
        self.cost.current = 0.0
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        outcome = reconcile_object(self.runtime, "cluster", CLUSTER_CONNECTION, obj)
        self.cycles.append((time.process_time() - start_cpu, time.perf_counter() - start_wall))
        self.cost.per_cycle.append(self.cost.current)
        if not outcome.ok:
            raise SystemExit(f"reconcile failed: {outcome.detail}")

    def close(self) -> None:
        """Time one periodic re-evaluation (alerts), then stop."""
        if self.backend is not None:
            start = time.thread_time()
            self.backend.engine.evaluate_all()
            self.cost.tick = time.thread_time() - start
            stop_plugins(self.runtime)
        else:
            self.runtime.store.close()
            self.runtime.pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--services", type=int, default=2_000)
    parser.add_argument("--cycles", type=int, default=3)
    args = parser.parse_args()
    redis_server = redis_process(require_binary("redis-server", "redis-server"))
    redis_server.start()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_objects(folder, args.nodes, args.pods, args.services)
        emulator, url = start_emulator(folder)
        try:
            hub = KubeClient(make_api_client(url), timeout=120)
            cc = {
                "apiVersion": CLUSTER_CONNECTION.api_version,
                "kind": "ClusterConnection",
                "metadata": {"name": "big", "namespace": NAMESPACE},
                "spec": {"endpoint": url, "credentialsRef": {"name": "big-token"}},
            }
            hub.request("POST", CLUSTER_CONNECTION.api_path(NAMESPACE), body=cc)
            redis_url = f"redis://127.0.0.1:{redis_server.port}/0"
            # Alternate the runtimes cycle by cycle, so machine load affects them alike.
            plain, with_alerts = Runner(folder, hub, redis_url, False), Runner(folder, hub, redis_url, True)
            no_lists = Runner(folder, hub, redis_url, False, {"RESOURCE_COLLECTION_ENABLED": "false"})
            try:
                for _ in range(args.cycles):
                    plain.cycle()
                    with_alerts.cycle()
                    no_lists.cycle()
            finally:
                plain.close()
                with_alerts.close()
                no_lists.close()
            cycles, alert_cycles, alerts = plain.cycles, with_alerts.cycles, with_alerts.cost
            typed, plain_decode, size = decode_times(hub)
            counts, listed, services = count_times(hub)
            with_lists, without_lists_run, listed_items = collection_time(hub)
        finally:
            emulator.terminate()
            emulator.wait(30)
            redis_server.cleanup()
    cpu = min(c for c, _ in cycles)
    without_lists = min(c for c, _ in no_lists.cycles)
    print(
        f"cluster: {args.nodes} nodes, {args.pods} pods, {services} services, pages of {PAGE_SIZE}, "
        f"{size / 1e6:.1f} MB of node+pod list JSON (busy shared machine: figures vary run to run)"
    )
    for index, (c, w) in enumerate(cycles, 1):
        print(f"cycle {index}: {c:.3f} s CPU, {w:.3f} s wall")
    print(
        f"reconcile CPU per cycle (best): {cpu:.3f} s  (target <= {TARGET_CPU_SECONDS} s: "
        f"{'met' if cpu <= TARGET_CPU_SECONDS else 'NOT met'})"
    )
    print(f"decode node+pod pages, typed partial decode + tally: {typed:.3f} s")
    print(f"decode node+pod pages, plain json.loads:             {plain_decode:.3f} s")
    print(
        f"ratio json.loads / typed decode: {plain_decode / typed:.1f}x; "
        f"reconcile CPU / json.loads: {cpu / plain_decode:.2f}"
    )
    print(
        f"added by R1 counts ({len(COUNTED_PATHS)} kinds, limit=1 + remainingItemCount): {counts * 1000:.1f} ms CPU"
        f"  vs counting the {services} services by listing them: {listed * 1000:.1f} ms CPU"
    )
    print(
        f"added by R3 resource lists (default caps, {listed_items} items, pods from the node pass's sweep): "
        f"{(with_lists - without_lists_run) * 1000:.1f} ms CPU per run of the nodes collector "
        f"({with_lists * 1000:.1f} ms with them, {without_lists_run * 1000:.1f} ms without); best cycle "
        f"{without_lists:.3f} s with RESOURCE_COLLECTION_ENABLED=false, {cpu:.3f} s with it "
        f"(that difference is mostly noise on a busy machine)"
    )
    evaluation = min(alerts.per_cycle)
    share = evaluation / cpu
    print(
        f"alerts: built-in rules evaluated after each reconcile (best): {evaluation * 1000:.2f} ms CPU = "
        f"{share * 100:.2f} % of the reconcile CPU without alerts (target < {TARGET_ALERTS_SHARE * 100:.0f} %: "
        f"{'met' if share < TARGET_ALERTS_SHARE else 'NOT met'}); one periodic re-evaluation: "
        f"{alerts.tick * 1000:.2f} ms"
    )
    alerts_cpu = min(c for c, _ in alert_cycles)
    print(
        f"reconcile CPU per cycle with alerts enabled (best): {alerts_cpu:.3f} s "
        f"({(alerts_cpu / cpu - 1) * 100:+.1f} % end to end, includes run-to-run noise)"
    )


if __name__ == "__main__":
    main()
