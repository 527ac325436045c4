"""The ConfigAudit plugin (tests/plugins/clusterpulse-configaudit): a new kind built from the public API only.

It runs under the real Manager, loaded by name from its entry point, against the kube_api
emulator and a real redis-server, and stores its state as generic records.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from clusterpulse_testing.polling import eventually

from clusterpulse_core.kube.client import KubeClient
from clusterpulse_core.runtime.bootstrap import build_runtime, load
from clusterpulse_core.runtime.manager import Manager

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
    api = kube_api(objects=[
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        *({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "team-a"},
           "data": {"k": "v"}} for i in range(3)),
    ])
    api.add_crd("audit.example.com", "v1", "ConfigAudit", "configaudits")
    return api


@pytest.fixture
def manager(hub: Any, redis_url: str, tmp_path: Path) -> Iterator[Manager]:
    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text(f"""
[clusterpulse]
plugins = ["redis", "configaudit"]
namespace = "{NAMESPACE}"
metrics_bind_address = "0"
health_probe_bind_address = "0"

[plugins.redis]
url = "{redis_url}"
""")
    config, host = load(str(config_file), env={})
    runtime = build_runtime(config, host, hub=KubeClient(hub.api_client()))
    manager = Manager(runtime)
    manager.start()
    assert manager.wait_synced(WAIT)
    yield manager
    manager.stop()


def test_a_config_audit_is_stored_reported_and_deleted(hub: Any, manager: Manager, redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    hub.create({"apiVersion": "audit.example.com/v1", "kind": "ConfigAudit",
                "metadata": {"name": "team-a-audit", "namespace": NAMESPACE}, "spec": {"namespace": "team-a"}})

    stored = eventually(lambda: client.get(f"configaudit:{NAMESPACE}/team-a-audit"), "the record", timeout=WAIT)
    record = json.loads(stored)
    assert record["kind"] == "ConfigAudit"
    assert (record["namespace"], record["name"]) == (NAMESPACE, "team-a-audit")
    assert record["document"] == {"namespace": "team-a", "configMaps": ["cm-0", "cm-1", "cm-2"]}
    assert record["numbers"] == {"configmaps": 3}
    assert client.smembers("configaudit:all") == {f"{NAMESPACE}/team-a-audit".encode()}
    assert client.smembers("configaudit:index:audited=team-a") == {f"{NAMESPACE}/team-a-audit".encode()}
    assert client.ttl(f"configaudit:{NAMESPACE}/team-a-audit") == -1

    status = eventually(lambda: (hub.get("audit.example.com/v1", "ConfigAudit", "team-a-audit", NAMESPACE)
                                 or {}).get("status"), "the status", timeout=WAIT)
    assert status == {"phase": "Ready", "configMaps": 3}

    hub.delete("audit.example.com/v1", "configaudits", "team-a-audit", NAMESPACE)
    eventually(lambda: client.get(f"configaudit:{NAMESPACE}/team-a-audit") is None,
               "the record's deletion", timeout=WAIT)
    assert client.smembers("configaudit:all") == set()
    assert client.exists("configaudit:index:audited=team-a") == 0
    assert not [key for key in client.scan_iter("configaudit:*")]


def test_the_generated_rbac_grants_what_the_plugin_declares(tmp_path: Path) -> None:
    from clusterpulse_core import rbac

    config_file = tmp_path / "clusterpulse.toml"
    config_file.write_text('[clusterpulse]\nplugins = ["configaudit"]\n')
    config, host = load(str(config_file), env={})
    kinds = [kind for _owner, kind in host.kinds.values()]
    role = next(doc for doc in rbac.hub_manifests(kinds, config.core) if doc["kind"] == "Role")
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]} in role["rules"]
    assert {"apiGroups": ["audit.example.com"], "resources": ["configaudits/status"], "verbs": ["patch"]} \
        in role["rules"]
    cross = next(doc for doc in rbac.cross_namespace_manifests(kinds, config.core) if doc["kind"] == "ClusterRole")
    assert cross["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
