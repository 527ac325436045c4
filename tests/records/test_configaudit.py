"""The ConfigAudit plugin (tests/plugins/clusterpulse-configaudit): a new kind built from the public API only.

It runs under the real Manager, loaded by name from its entry point, against the kube_api
emulator and a real redis-server, and stores its state as generic records.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from clusterpulse_testing.polling import eventually

from clusterpulse_core.pieces import RecordPiece

PLUGIN_DIR = Path(__file__).parent.parent / "plugins" / "clusterpulse-configaudit" / "clusterpulse_configaudit"
#: What a plugin may import from ClusterPulse: the public API table of docs/plugins.md.
GUIDE = (Path(__file__).parent.parent.parent / "docs" / "plugins.md").read_text()
PUBLIC_SECTION = GUIDE.split("## The public API")[1].split("\n## ")[0]
PUBLIC_MODULES = set(re.findall(r"^\| `(clusterpulse_[a-z_.]*)`(?:, `[a-z_.]*`)* \|", PUBLIC_SECTION, re.M))
NAMESPACE = "clusterpulse"
WAIT = 15.0


def test_the_plugin_imports_only_the_public_api() -> None:
    imported: set[str] = set()
    for path in PLUGIN_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
    ours = {name for name in imported if name.startswith("clusterpulse")}
    assert "clusterpulse_core.pieces" in ours and "clusterpulse_core.pieces" in PUBLIC_MODULES
    assert "clusterpulse_core.runtime.manager" not in PUBLIC_MODULES
    assert ours <= PUBLIC_MODULES, f"internal imports: {sorted(ours - PUBLIC_MODULES)}"


@pytest.fixture
def hub(kube_api: Any) -> Any:
    api = kube_api(
        objects=[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
            *(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i}", "namespace": "team-a"},
                    "data": {"k": "v"},
                }
                for i in range(3)
            ),
        ]
    )
    api.add_crd("audit.example.com", "v1", "ConfigAudit", "configaudits")
    return api


@pytest.fixture
def manager(hub: Any, redis_url: str, clusterpulse_manager: Any) -> Any:
    """The real manager with the plugin loaded by name (the public test harness, docs/reference/testing.md)."""
    return clusterpulse_manager(["redis", "configaudit"], hub, redis_url=redis_url, core={"namespace": NAMESPACE})


def test_a_config_audit_is_stored_reported_and_deleted(hub: Any, manager: Any, redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    hub.create(
        {
            "apiVersion": "audit.example.com/v1",
            "kind": "ConfigAudit",
            "metadata": {"name": "team-a-audit", "namespace": NAMESPACE},
            "spec": {"namespace": "team-a"},
        }
    )

    stored = eventually(lambda: client.get(f"configaudit:{NAMESPACE}/team-a-audit"), "the record", timeout=WAIT)
    record = json.loads(stored)
    assert record["kind"] == "ConfigAudit"
    assert (record["namespace"], record["name"]) == (NAMESPACE, "team-a-audit")
    assert record["document"] == {"namespace": "team-a", "configMaps": ["cm-0", "cm-1", "cm-2"]}
    assert record["numbers"] == {"configmaps": 3}
    assert client.smembers("configaudit:all") == {f"{NAMESPACE}/team-a-audit".encode()}
    assert client.smembers("configaudit:index:audited=team-a") == {f"{NAMESPACE}/team-a-audit".encode()}
    assert client.ttl(f"configaudit:{NAMESPACE}/team-a-audit") == -1
    # The harness records what the manager stored, beside Redis.
    assert [(p.kind, p.name) for p in manager.stored(RecordPiece)][:1] == [("ConfigAudit", "team-a-audit")]

    status = eventually(
        lambda: (hub.get("audit.example.com/v1", "ConfigAudit", "team-a-audit", NAMESPACE) or {}).get("status"),
        "the status",
        timeout=WAIT,
    )
    assert status == {"phase": "Ready", "configMaps": 3}

    hub.delete("audit.example.com/v1", "configaudits", "team-a-audit", NAMESPACE)
    eventually(
        lambda: client.get(f"configaudit:{NAMESPACE}/team-a-audit") is None, "the record's deletion", timeout=WAIT
    )
    assert client.smembers("configaudit:all") == set()
    assert client.exists("configaudit:index:audited=team-a") == 0
    assert not [key for key in client.scan_iter("configaudit:*")]


def test_the_generated_rbac_grants_what_the_plugin_declares(tmp_path: Path) -> None:
    """``clusterpulse rbac`` (as a user runs it) grants what the plugin's kind declares."""
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text('[clusterpulse]\nplugins = ["configaudit"]\n')
    clusterpulse = str(Path(sys.executable).parent / "clusterpulse")
    for args, kind in ((["rbac"], "Role"), (["rbac", "--cross-namespace"], "ClusterRole")):
        result = subprocess.run(
            [clusterpulse, "--config", str(config_file), *args], capture_output=True, text=True, timeout=120, check=True
        )
        docs = [doc for doc in yaml.safe_load_all(result.stdout) if doc and doc["kind"] == kind]
        assert docs, result.stdout
        rules = [rule for doc in docs for rule in doc["rules"]]
        if kind == "Role":
            assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]} in rules
            assert {
                "apiGroups": ["audit.example.com"],
                "resources": ["configaudits/status"],
                "verbs": ["patch"],
            } in rules
        else:
            assert rules == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
