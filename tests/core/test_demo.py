"""The README's main job: ``clusterpulse demo`` on the embedded fleet, with a real Redis."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from clusterpulse_demo.fleet import FLEET_DIR
from clusterpulse_demo.run import run_demo
from clusterpulse_demo.summary import read_alerts, read_fleet, read_sources

from clusterpulse_core.serde import parse_time


def _fixture_objects(cluster: str, kind: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted((FLEET_DIR / "clusters" / cluster).glob("*.yaml")):
        found += [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") == kind]
    return found


def _cluster_names() -> list[str]:
    return [c["name"] for c in yaml.safe_load((FLEET_DIR / "fleet.yaml").read_text())["clusters"]]


def _condition(obj: dict[str, Any], kind: str) -> str:
    return next((c["status"] for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), "")


def _expected_alerts(clusters: list[str]) -> set[tuple[str, str, str]]:
    """The demo fleet's NotReady and cordoned nodes and unavailable or degraded ClusterOperators."""
    expected = set()
    for name in clusters:
        for node in _fixture_objects(name, "Node"):
            node_name = node["metadata"]["name"]
            if _condition(node, "Ready") != "True":
                expected.add((name, "NodeNotReady", f"node/{node_name}"))
            if node.get("spec", {}).get("unschedulable"):
                expected.add((name, "NodeUnschedulable", f"node/{node_name}"))
            for pressure in ("MemoryPressure", "DiskPressure", "PIDPressure"):
                if _condition(node, pressure) == "True":
                    expected.add((name, f"Node{pressure}", f"node/{node_name}"))
        for operator in _fixture_objects(name, "ClusterOperator"):
            if _condition(operator, "Available") != "True" or _condition(operator, "Degraded") == "True":
                expected.add((name, "ClusterOperatorDown", f"clusteroperator/{operator['metadata']['name']}"))
    return expected


#: What the hub installs on the push-mode edge-lab (docs/agent-deploy.md), which its collections then count.
_AGENT_OBJECTS = {"Deployment": [("clusterpulse-system", "clusterpulse-collector")]}
_LISTS = (
    ("pods", "Pod"),
    ("deployments", "Deployment"),
    ("services", "Service"),
    ("statefulsets", "StatefulSet"),
    ("daemonsets", "DaemonSet"),
)


def _check_reader_keys(client: redis.Redis, cluster: str) -> None:
    """What the readers show of a cluster, pushed or pulled alike: node conditions (R2) and ages (R6),
    resource lists (R3) and the R1 counts, against the fleet's YAML."""
    push = cluster == "edge-lab"
    for node in _fixture_objects(cluster, "Node"):
        name = node["metadata"]["name"]
        current = json.loads(client.hget(f"cluster:{cluster}:node:{name}", "current") or "{}")
        # The emulator, as an API server, sets metadata.creationTimestamp at creation: a real age, not zero.
        assert parse_time(current["creation_timestamp"]).year > 2000, (cluster, name)
        conditions = {k: json.loads(v) for k, v in client.hgetall(f"cluster:{cluster}:node:{name}:conditions").items()}
        want = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert {k: c["status"] for k, c in conditions.items()} == want, (cluster, name)
    metrics = json.loads(client.get(f"cluster:{cluster}:metrics") or "{}")
    for key, kind in _LISTS:
        items = json.loads(client.get(f"cluster:{cluster}:{key}") or "[]")  # an empty list's key is deleted (R3)
        want = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in _fixture_objects(cluster, kind))
        want = sorted(want + (_AGENT_OBJECTS.get(kind, []) if push else []))
        assert sorted((i["namespace"], i["name"]) for i in items) == want, (cluster, key)
        if key != "pods":
            assert metrics[key] == len(want), (cluster, key)
    assert metrics["pvcs"] == len(_fixture_objects(cluster, "PersistentVolumeClaim")), cluster
    assert client.exists(f"cluster:{cluster}:resource_metadata")


def test_demo_runs_the_manager_and_stores_every_cluster(redis_url: str) -> None:
    lines: list[str] = []
    result = run_demo(2, redis_url, echo=lines.append)
    assert [line.split(":")[0] for line in lines if line.startswith("cycle ")] == ["cycle 1", "cycle 2"]
    # Three ClusterConnections, the docker-registry's RegistryConnection, the MetricSource and two policies.
    assert any(line.startswith("cycle 2: reconciled 7 objects") for line in lines)
    # edge-lab is push mode: a `clusterpulse agent` process streams it (both modes side by side).
    assert any(line.startswith("push: edge-lab (agent ") and "connected" in line for line in lines)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    rows = {row.name: row for row in read_fleet(client)}
    assert sorted(rows) == sorted(_cluster_names())
    for name, row in rows.items():
        nodes = _fixture_objects(name, "Node")
        pods = _fixture_objects(name, "Pod")
        # R7: the fixture's not-Ready nodes decide the health (requests stay low); a cordoned but Ready node
        # is Ready (docs/compatibility.md#r8): k8s-staging, one NotReady and one cordoned node of four, is degraded.
        not_ready = sum(1 for n in nodes if _condition(n, "Ready") != "True")
        assert (row.health, row.message) == (
            ("healthy", "Cluster is healthy")
            if not not_ready
            else ("unhealthy" if not_ready / len(nodes) >= 0.5 else "degraded", f"Issues: {not_ready} nodes not ready")
        )
        assert row.nodes == len(nodes)
        # docs/compatibility.md#r1: every pod of the cluster, bound to a node or not.
        assert row.pods == len(pods)
        assert row.pods_running == sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
        assert row.cluster_operators == len(_fixture_objects(name, "ClusterOperator"))
        # Every cluster's health reason is printed under the table.
        assert f"  {name}: {row.message}" in result.summary.splitlines()
        _check_reader_keys(client, name)
    sources = {row.cluster: row for row in read_sources(client) if row.source == "clusterpulse/pod-phases"}
    assert sorted(sources) == sorted(rows)
    for name, source in sources.items():
        excluded = ("kube-*", "openshift-*")
        pods = [
            p
            for p in _fixture_objects(name, "Pod")
            if not any(fnmatch.fnmatch(p["metadata"]["namespace"], pattern) for pattern in excluded)
        ]
        assert source.resources == len(pods)
        assert source.values["pods"] == len(pods)
        assert source.values["running"] == sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
    registry_status = client.get("registry:demo-registry:status")
    assert client.smembers("registries:all") == {"demo-registry"}
    assert registry_status is not None and '"available":true' in registry_status.replace(" ", "")
    assert "Registry demo-registry: available" in result.summary
    assert "ocp-prod-east" in result.summary
    expected_alerts = _expected_alerts(sorted(rows))
    assert {name for _c, name, _r in expected_alerts} >= {"NodeNotReady", "NodeUnschedulable", "ClusterOperatorDown"}
    assert {(a.cluster, a.name, a.resource) for a in read_alerts(client)} == expected_alerts
    assert f"Alerts ({len(expected_alerts)} firing):" in result.summary
    assert "NodeNotReady node/" in result.summary
    assert "MetricSource clusterpulse/pod-phases:" in result.summary
    # hub/monitoraccesspolicies.yaml: admins see everything, the staging team only k8s-staging and not its pods
    access = result.summary.split("Access (clusterpulse policy can-i):\n")[1].splitlines()
    table = {tuple(line.split()[0:1] + line.split()[2:3]): line.split()[3:] for line in access[1:]}
    for cluster in rows:
        assert table[("alice", cluster)] == ["allow", "allow", "allow"]
        assert table[("bob", cluster)] == (["allow", "partial", "deny"] if cluster == "k8s-staging" else ["deny"] * 3)
        assert table[("carol", cluster)] == ["deny"] * 3
    assert client.smembers("policy:group:staging-team") == {"policy:clusterpulse:staging-team"}
    patterns = dict(result.keys)
    assert patterns["clusters:all"] == 1
    assert patterns["cluster:<cluster>:status"] == len(rows)
    assert patterns["cluster:<cluster>:node:<node>"] == sum(len(_fixture_objects(n, "Node")) for n in rows)


def test_demo_command_without_redis_server_names_the_package(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))
    result = subprocess.run(
        [sys.executable, "-c", "from clusterpulse_core.cli import main; main()", "demo", "--cycles", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "redis-server is not installed: run `sudo apt-get install -y redis-server`" in result.stderr


def test_demo_command_with_redis_url(redis_url: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from clusterpulse_core.cli import main; main()",
            "demo",
            "--cycles",
            "1",
            "--redis-url",
            redis_url,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert "cycle 1: reconciled 7 objects" in result.stdout
    assert "Redis keys written" in result.stdout
    assert redis.Redis.from_url(redis_url).scard("clusters:all") == len(_cluster_names())


def test_demo_without_docker_registry_says_it_skipped_registries(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker-registry (Redis comes from redis_url)
    lines: list[str] = []
    run_demo(1, redis_url, echo=lines.append)
    assert any("docker-registry is not installed, skipped registries" in line for line in lines)
    assert any(line.startswith("cycle 1: reconciled 6 objects") for line in lines)
    assert not redis.Redis.from_url(redis_url).exists("registries:all")


def test_demo_config_adds_the_files_plugins_beside_the_demos(redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "extra.toml").write_text(
        '[clusterpulse]\nplugins = ["redis", "example"]\n\n[plugins.example]\ngreeting = "hi from the file"\n'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from clusterpulse_core.cli import main; main()",
            "demo",
            "--cycles",
            "1",
            "--redis-url",
            redis_url,
            "--config",
            "extra.toml",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.endswith("; plugins from extra.toml: example"), first
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    labelled = {name: client.get(f"cluster:{name}:labels") for name in _cluster_names()}
    # The example plugin's hub collector labels every pulled cluster with its configured greeting.
    # The push-mode cluster edge-lab is pulled too until its agent has registered, which may or may
    # not happen within the one cycle: it is not part of the check.
    greeted = {
        name for name, labels in labelled.items() if labels and json.loads(labels).get("greeted") == "hi from the file"
    }
    assert {"k8s-staging", "ocp-prod-east"} <= greeted, labelled


def _sample_lines() -> list[str]:
    """The lines of docs/demo.md's sample output (its first ``` block)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "demo.md").read_text()
    return text.split("```\n", 2)[1].splitlines()


def _shape(line: str) -> re.Pattern[str]:
    """``line`` with every number (ports, timings, counts) free: the shape a run must show."""
    parts = re.split(r"\d+(?:\.\d+)?", line)
    return re.compile(r"\d+(?:\.\d+)?".join(re.escape(part) for part in parts))


def test_the_documented_sample_matches_a_run(redis_url: str) -> None:
    lines: list[str] = []
    run_demo(1, redis_url, echo=lambda text: lines.extend(text.splitlines() or [""]))
    position = 0
    for expected in _sample_lines():
        if expected == "...":
            continue
        shape = _shape(expected)
        found = next((i for i in range(position, len(lines)) if shape.fullmatch(lines[i])), None)
        assert found is not None, (
            f"docs/demo.md shows {expected!r}, the run printed no such line after line {position}:\n" + "\n".join(lines)
        )
        position = found + 1
