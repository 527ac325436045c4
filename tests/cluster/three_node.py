"""A three-node OpenShift-like managed cluster, written out object by object, with its expected values.

Every expected number below is worked out by hand from the objects (the arithmetic is
spelled out in the same order the collector sums), so the test checks the collector,
not a copy of it.
"""

from __future__ import annotations

from typing import Any

from clusterpulse_testing.kube_api import any_content_crd

GI = 1024**3
MI = 1024**2
T1, T2, T3 = "2024-12-01T10:00:00Z", "2024-12-01T10:00:30Z", "2024-12-24T08:00:00Z"
TOKEN = "three-node-token"
VERSION = {"gitVersion": "v1.27.16+03a907c", "platform": "linux/amd64"}


def pod(
    namespace: str,
    name: str,
    node: str | None,
    phase: str,
    requests: list[dict[str, str] | None],
    init: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Pod with one container per ``requests`` entry (None: a container without resources)."""
    containers = [
        {"name": f"c{i}", "image": "example/app:1"} | ({"resources": {"requests": r}} if r else {})
        for i, r in enumerate(requests)
    ]
    spec: dict[str, Any] = {"containers": containers}
    if node:
        spec["nodeName"] = node
    if init:
        spec["initContainers"] = [{"name": "init", "image": "busybox", "resources": {"requests": init}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase},
    }


NODES = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "cp-0",
            "labels": {
                "kubernetes.io/hostname": "cp-0",
                "node-role.kubernetes.io/master": "",
                "node-role.kubernetes.io/control-plane": "",
            },
            "annotations": {"machine.openshift.io/machine": "openshift-machine-api/cp-0"},
        },
        "spec": {"taints": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "100Gi", "pods": "110"},
            "allocatable": {"cpu": "3500m", "memory": "15Gi", "ephemeral-storage": "96Gi", "pods": "110"},
            "conditions": [
                {
                    "type": "MemoryPressure",
                    "status": "False",
                    "reason": "KubeletHasSufficientMemory",
                    "message": "kubelet has sufficient memory available",
                    "lastTransitionTime": T1,
                },
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastTransitionTime": T2,
                },
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.10"}, {"type": "Hostname", "address": "cp-0"}],
            "nodeInfo": {
                "kernelVersion": "5.14.0-284",
                "osImage": "RHCOS 4.14",
                "containerRuntimeVersion": "cri-o://1.27.1",
                "kubeletVersion": "v1.27.16",
                "architecture": "amd64",
            },
            "images": [
                {"names": ["a"], "sizeBytes": 1},
                {"names": ["b"], "sizeBytes": 2},
                {"names": ["c"], "sizeBytes": 3},
            ],
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "worker-0",
            "labels": {"kubernetes.io/hostname": "worker-0", "node-role.kubernetes.io/worker": ""},
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "200Gi", "pods": "250"},
            "allocatable": {"cpu": "7500m", "memory": "31Gi", "ephemeral-storage": "190Gi", "pods": "250"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastTransitionTime": T2,
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.20"},
                {"type": "ExternalIP", "address": "203.0.113.20"},
                {"type": "Hostname", "address": "worker-0"},
            ],
            "nodeInfo": {
                "kernelVersion": "5.14.0-284",
                "osImage": "RHCOS 4.14",
                "containerRuntimeVersion": "cri-o://1.27.1",
                "kubeletVersion": "v1.27.16",
                "architecture": "amd64",
            },
            "images": [{"names": ["a"]}, {"names": ["b"]}],
            "volumesAttached": [{"name": "vol-1", "devicePath": ""}, {"name": "vol-2", "devicePath": ""}],
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "worker-1"}},
        "spec": {"unschedulable": True},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "250"},
            "allocatable": {"cpu": "7500m", "memory": "31Gi", "pods": "250"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "KubeletNotReady",
                    "message": "container runtime is down",
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.21"}],
            "nodeInfo": {
                "kernelVersion": "5.14.0-284",
                "osImage": "RHCOS 4.14",
                "containerRuntimeVersion": "cri-o://1.27.1",
                "kubeletVersion": "v1.27.16",
                "architecture": "arm64",
            },
        },
    },
]

NAMESPACES = ["cert-manager", "default", "kube-system", "openshift-console", "shop"]

PODS = [
    pod("kube-system", "etcd-cp-0", "cp-0", "Running", [{"cpu": "500m", "memory": "512Mi"}]),
    pod(
        "kube-system",
        "scheduler-cp-0",
        "cp-0",
        "Running",
        [{"cpu": "250m", "memory": "256Mi"}],
        init={"cpu": "1", "memory": "1Gi"},
    ),
    pod("kube-system", "installer-cp-0", "cp-0", "Succeeded", [{"cpu": "100m", "memory": "100Mi"}]),
    pod("shop", "web-1", "worker-0", "Running", [{"cpu": "1", "memory": "1Gi"}, {"cpu": "100m", "memory": "64Mi"}]),
    pod("shop", "batch-1", "worker-0", "Pending", [{"cpu": "500m", "memory": "2Gi"}]),
    pod("shop", "evicted-1", "worker-0", "Failed", [{"cpu": "1", "memory": "1Gi"}]),
    pod("shop", "lost-1", "worker-0", "Unknown", [{"cpu": "1", "memory": "1Gi"}]),
    pod("shop", "plain-1", "worker-0", "Running", [None]),
    pod("shop", "cache-1", "worker-1", "Running", [{"cpu": "250m", "memory": "128Mi"}]),
    pod("shop", "unscheduled-1", None, "Pending", [{"cpu": "4", "memory": "8Gi"}]),
]

DEPLOYMENTS = [
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": "example/app:1"}]},
            },
        },
    }
    for ns, name in (("shop", "web"), ("shop", "batch"), ("openshift-console", "console"))
]

#: One of each other counted kind (docs/compatibility.md#r1 counts, docs/compatibility.md#r3 lists).
WORKLOADS = [
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "ports": [{"port": 80}]},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "example/db:1"}]},
            },
        },
        "status": {"replicas": 2, "readyReplicas": 1},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "node-exporter", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "node-exporter"}},
            "template": {
                "metadata": {"labels": {"app": "node-exporter"}},
                "spec": {"containers": [{"name": "exporter", "image": "example/exporter:1"}]},
            },
        },
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2},
    },
    {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-db-0", "namespace": "shop"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    },
]

OPENSHIFT = [
    any_content_crd("config.openshift.io", "v1", "ClusterVersion", "clusterversions", namespaced=False),
    any_content_crd("config.openshift.io", "v1", "ClusterOperator", "clusteroperators", namespaced=False),
    any_content_crd("route.openshift.io", "v1", "Route", "routes"),
    any_content_crd("operators.coreos.com", "v1alpha1", "Subscription", "subscriptions"),
    any_content_crd("operators.coreos.com", "v1alpha1", "ClusterServiceVersion", "clusterserviceversions"),
    {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "spec": {"channel": "stable-4.14", "clusterID": "0d7c5f8e-1234-4abc-9def-0123456789ab"},
        "status": {
            "desired": {"version": "4.14.8", "image": "quay.io/openshift-release-dev/ocp-release@sha256:abc"},
            "availableUpdates": [{"version": "4.14.9"}, {"version": "4.14.10"}],
            "history": [
                {
                    "state": "Completed",
                    "startedTime": "2024-12-01T09:00:00Z",
                    "completionTime": "2024-12-01T10:00:00Z",
                    "version": "4.14.8",
                }
            ],
            "conditions": [
                {"type": "Available", "status": "True", "message": "Done applying 4.14.8"},
                {"type": "Progressing", "status": "False", "message": "Cluster version is 4.14.8"},
                {"type": "Failing", "status": "False"},
            ],
        },
    },
    {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "console", "namespace": "openshift-console"},
        "spec": {
            "host": "console-openshift-console.apps.three.example.net",
            "tls": {"termination": "reencrypt"},
            "to": {"kind": "Service", "name": "console"},
        },
    },
    {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterOperator",
        "metadata": {"name": "dns"},
        "status": {
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "lastTransitionTime": T1,
                    "reason": "AsExpected",
                    "message": "DNS is available",
                },
                {"type": "Upgradeable", "status": "True", "lastTransitionTime": T2},
            ],
            "versions": [{"name": "operator", "version": "4.14.8"}, {"name": "coredns", "version": "1.10"}],
            "relatedObjects": [{"group": "", "resource": "namespaces", "name": "openshift-dns"}],
        },
    },
    {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterOperator",
        "metadata": {"name": "authentication"},
        "status": {
            "conditions": [
                {
                    "type": "Degraded",
                    "status": "True",
                    "lastTransitionTime": T3,
                    "reason": "OAuthDown",
                    "message": "oauth server down",
                },
                {"type": "Available", "status": "True", "lastTransitionTime": T1},
            ],
            "versions": [{"name": "operator", "version": "4.14.8"}],
        },
    },
    {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "cert-manager", "namespace": "cert-manager"},
        "spec": {"installPlanApproval": "Automatic", "name": "cert-manager"},
        "status": {"installedCSV": "cert-manager.v1.13.0"},
    },
    {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "waiting", "namespace": "shop"},
        "spec": {"name": "waiting"},
        "status": {},
    },
    {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": "cert-manager.v1.13.0",
            "namespace": "cert-manager",
            "creationTimestamp": "2024-11-01T08:00:00Z",
        },
        "spec": {
            "displayName": "cert-manager",
            "version": "1.13.0",
            "provider": {"name": "Red Hat"},
            "installModes": [
                {"type": "OwnNamespace", "supported": False},
                {"type": "AllNamespaces", "supported": True},
            ],
        },
        "status": {"phase": "Succeeded", "lastUpdateTime": "2024-11-01T08:02:10Z"},
    },
]


def objects() -> list[dict[str, Any]]:
    """Everything the managed cluster serves."""
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in NAMESPACES]
    return [*namespaces, *OPENSHIFT, *NODES, *PODS, *DEPLOYMENTS, *WORKLOADS]


ZERO = "0001-01-01T00:00:00Z"
NOW = "2025-01-01T00:00:00Z"


def _node(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "timestamp": NOW,
        "conditions": [],
        "storage_capacity": 0,
        "storage_allocatable": 0,
        "pods_running": 0,
        "pods_pending": 0,
        "pods_failed": 0,
        "pods_succeeded": 0,
        "pods_total": 0,
        "cpu_requested": 0.0,
        "memory_requested": 0,
        "kernel_version": "5.14.0-284",
        "os_image": "RHCOS 4.14",
        "container_runtime": "cri-o://1.27.1",
        "kubelet_version": "v1.27.16",
        "architecture": "amd64",
        "annotations": {},
        "taints": [],
        "external_ip": "",
        "hostname": "",
        "images_count": 0,
        "volumes_attached": 0,
    }
    base.update(fields)
    return base


CP0_CPU = 0.5 + 0.25
CP0_MEM = 512 * MI + 256 * MI
W0_CPU = 1.0 + 0.1 + 0.5
W0_MEM = GI + 64 * MI + 2 * GI
W1_CPU = 0.25
W1_MEM = 128 * MI

EXPECTED_NODES = {
    "cp-0": _node(
        name="cp-0",
        status="Ready",
        roles=["control-plane", "master"],
        conditions=[
            {
                "type": "MemoryPressure",
                "status": "False",
                "reason": "KubeletHasSufficientMemory",
                "message": "kubelet has sufficient memory available",
                "last_transition_time": T1,
            },
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "last_transition_time": T2,
            },
        ],
        cpu_capacity=4.0,
        memory_capacity=16 * GI,
        storage_capacity=100 * GI,
        pods_capacity=110,
        cpu_allocatable=3.5,
        memory_allocatable=15 * GI,
        storage_allocatable=96 * GI,
        pods_allocatable=110,
        cpu_requested=CP0_CPU,
        memory_requested=CP0_MEM,
        cpu_usage_percent=CP0_CPU / 3.5 * 100,
        memory_usage_percent=CP0_MEM / (15 * GI) * 100,
        pods_running=2,
        pods_succeeded=1,
        pods_total=3,
        labels={
            "kubernetes.io/hostname": "cp-0",
            "node-role.kubernetes.io/master": "",
            "node-role.kubernetes.io/control-plane": "",
        },
        annotations={"machine.openshift.io/machine": "openshift-machine-api/cp-0"},
        taints=[{"key": "node-role.kubernetes.io/master", "value": "", "effect": "NoSchedule"}],
        internal_ip="10.0.0.10",
        hostname="cp-0",
        images_count=3,
    ),
    "worker-0": _node(
        name="worker-0",
        status="Ready",
        roles=["worker"],
        conditions=[
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "last_transition_time": T2,
            }
        ],
        cpu_capacity=8.0,
        memory_capacity=32 * GI,
        storage_capacity=200 * GI,
        pods_capacity=250,
        cpu_allocatable=7.5,
        memory_allocatable=31 * GI,
        storage_allocatable=190 * GI,
        pods_allocatable=250,
        cpu_requested=W0_CPU,
        memory_requested=W0_MEM,
        cpu_usage_percent=W0_CPU / 7.5 * 100,
        memory_usage_percent=W0_MEM / (31 * GI) * 100,
        pods_running=2,
        pods_pending=1,
        pods_failed=1,
        pods_total=5,
        labels={"kubernetes.io/hostname": "worker-0", "node-role.kubernetes.io/worker": ""},
        internal_ip="10.0.0.20",
        external_ip="203.0.113.20",
        hostname="worker-0",
        images_count=2,
        volumes_attached=2,
    ),
    "worker-1": _node(
        name="worker-1",
        status="SchedulingDisabled",
        roles=[],
        conditions=[
            {
                "type": "Ready",
                "status": "False",
                "reason": "KubeletNotReady",
                "message": "container runtime is down",
                "last_transition_time": ZERO,
            }
        ],
        cpu_capacity=8.0,
        memory_capacity=32 * GI,
        pods_capacity=250,
        cpu_allocatable=7.5,
        memory_allocatable=31 * GI,
        pods_allocatable=250,
        cpu_requested=W1_CPU,
        memory_requested=W1_MEM,
        cpu_usage_percent=W1_CPU / 7.5 * 100,
        memory_usage_percent=W1_MEM / (31 * GI) * 100,
        pods_running=1,
        pods_total=1,
        architecture="arm64",
        labels={"kubernetes.io/hostname": "worker-1"},
        internal_ip="10.0.0.21",
    ),
}

# docs/compatibility.md#r1: pods by phase over every pod (unscheduled-1 too); worker-1 is cordoned, so not Ready.
EXPECTED_METRICS = {
    "timestamp": NOW,
    "nodes": 3,
    "nodes_ready": 2,
    "nodes_not_ready": 1,
    "namespaces": 5,
    "pods": 10,
    "pods_running": 5,
    "pods_pending": 2,
    "pods_failed": 1,
    "cpu_capacity": 20.0,
    "cpu_allocatable": 18.5,
    "cpu_requested": CP0_CPU + W0_CPU + W1_CPU,
    "cpu_usage_percent": (CP0_CPU + W0_CPU + W1_CPU) / 18.5 * 100,
    "memory_capacity": 80 * GI,
    "memory_allocatable": 77 * GI,
    "memory_requested": CP0_MEM + W0_MEM + W1_MEM,
    "memory_usage_percent": (CP0_MEM + W0_MEM + W1_MEM) / (77 * GI) * 100,
    "storage_capacity": 300 * GI,
    "storage_used": 0,
    "pvcs": 1,
    "services": 1,
    "deployments": 3,
    "statefulsets": 1,
    "daemonsets": 1,
}

EXPECTED_INFO = {
    "api_url": "<endpoint>",
    "version": "4.14.8",
    "platform": "OpenShift",
    "channel": "stable-4.14",
    "cluster_id": "0d7c5f8e-1234-4abc-9def-0123456789ab",
    "image": "quay.io/openshift-release-dev/ocp-release@sha256:abc",
    "update_available": True,
    "available_update_version": "4.14.9",
    "version_state": "Completed",
    "version_started_time": "2024-12-01T09:00:00Z",
    "version_completion_time": "2024-12-01T10:00:00Z",
    "conditions": [
        {"type": "Available", "status": "True", "message": "Done applying 4.14.8", "reason": None},
        {"type": "Progressing", "status": "False", "message": "Cluster version is 4.14.8", "reason": None},
        {"type": "Failing", "status": "False", "message": None, "reason": None},
    ],
    "is_available": True,
    "console_url": "https://console-openshift-console.apps.three.example.net",
}

EXPECTED_OPERATORS = [
    {
        "name": "cert-manager.v1.13.0",
        "display_name": "cert-manager",
        "version": "1.13.0",
        "status": "Succeeded",
        "namespace": "cert-manager",
        "installed_namespace": "cert-manager",
        "install_modes": ["AllNamespaces"],
        "install_mode": "AllNamespaces",
        "provider": "Red Hat",
        "created_at": "2024-11-01T08:00:00Z",
        "updated_at": "2024-11-01T08:02:10Z",
        "is_cluster_wide": True,
        "available_in_namespaces": ["*"],
        "available_count": 1,
        "available_namespaces_detail": "All namespaces",
    }
]

EXPECTED_CLUSTER_OPERATORS = [
    {
        "name": "authentication",
        "version": "4.14.8",
        "available": True,
        "progressing": False,
        "degraded": True,
        "upgradeable": False,
        "message": "oauth server down",
        "reason": "OAuthDown",
        "last_transition_time": T3,
        "conditions": [
            {
                "type": "Degraded",
                "status": "True",
                "last_transition_time": T3,
                "reason": "OAuthDown",
                "message": "oauth server down",
            },
            {"type": "Available", "status": "True", "last_transition_time": T1, "reason": "", "message": ""},
        ],
        "versions": [{"name": "operator", "version": "4.14.8"}],
        "related_objects": [],
    },
    {
        "name": "dns",
        "version": "4.14.8",
        "available": True,
        "progressing": False,
        "degraded": False,
        "upgradeable": True,
        "message": "",
        "reason": "",
        "last_transition_time": T2,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "last_transition_time": T1,
                "reason": "AsExpected",
                "message": "DNS is available",
            },
            {"type": "Upgradeable", "status": "True", "last_transition_time": T2, "reason": "", "message": ""},
        ],
        "versions": [{"name": "operator", "version": "4.14.8"}, {"name": "coredns", "version": "1.10"}],
        "related_objects": [{"group": "", "resource": "namespaces", "namespace": "", "name": "openshift-dns"}],
    },
]
