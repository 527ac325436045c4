"""deploy/ stays true: the CRDs match what the plugins declare, the manifests parse."""

from __future__ import annotations

from pathlib import Path

import yaml

from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.plugins import PluginHost
from clusterpulse_core.runtime.bootstrap import load

DEPLOY = Path(__file__).parent.parent / "deploy"


def test_crd_manifests_match_the_declared_kinds() -> None:
    host = PluginHost(["cluster", "registry", "metricsource", "alerts"])
    expected = [crd_manifest(kind) for _owner, kind in host.kinds.values()]
    committed = [doc for doc in yaml.safe_load_all((DEPLOY / "crds.yaml").read_text()) if doc]
    assert committed == expected, "deploy/crds.yaml is stale: regenerate it with `clusterpulse crds`"


def test_crds_cover_the_four_kinds_with_status_and_printer_columns() -> None:
    docs = {doc["spec"]["names"]["kind"]: doc for doc in yaml.safe_load_all((DEPLOY / "crds.yaml").read_text())}
    assert set(docs) == {"ClusterConnection", "RegistryConnection", "MetricSource", "AlertRule"}
    for doc in docs.values():
        assert doc["spec"]["group"] == "clusterpulse.io"
        version = doc["spec"]["versions"][0]
        assert version["name"] == "v1alpha1"
        assert version["subresources"] == {"status": {}}
        assert version["additionalPrinterColumns"]


def test_manifests_parse_and_the_config_validates(tmp_path: Path) -> None:
    for name in ("rbac.yaml", "deployment.yaml", "config.yaml"):
        for doc in yaml.safe_load_all((DEPLOY / name).read_text()):
            assert doc["metadata"]["namespace"] == "clusterpulse", name
    config_map = yaml.safe_load((DEPLOY / "config.yaml").read_text())
    path = tmp_path / "clusterpulse.toml"
    path.write_text(config_map["data"]["clusterpulse.toml"])
    config, host = load(str(path), env={})
    assert config.core.leader_elect
    assert host.order == ["redis", "cluster", "registry", "metricsource", "vmwriter", "alerts"]
