"""The MonitorAccessPolicy kind: its generated CRD, the CLI listings and the emulator applying its defaults."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from clusterpulse_policy.kind import MONITOR_ACCESS_POLICY

from clusterpulse_core.cli import cli
from clusterpulse_core.crds import crd_manifest


def _schema() -> dict[str, Any]:
    [version] = crd_manifest(MONITOR_ACCESS_POLICY)["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def test_the_crd_names_scope_and_columns() -> None:
    crd = crd_manifest(MONITOR_ACCESS_POLICY)
    assert crd["metadata"]["name"] == "monitoraccesspolicies.clusterpulse.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["shortNames"] == ["map", "policy"]
    [version] = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    assert [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("State", "string", ".status.state"),
        ("Effect", "string", ".spec.access.effect"),
        ("Priority", "integer", ".spec.identity.priority"),
        ("Users", "integer", ".status.affectedUsers"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]


def test_the_schema_enums_defaults_and_bounds() -> None:
    spec = _schema()["properties"]["spec"]
    assert spec["required"] == ["identity", "access", "scope"]
    priority = spec["properties"]["identity"]["properties"]["priority"]
    assert (priority["minimum"], priority["maximum"], priority["default"]) == (1, 10000, 100)
    access = spec["properties"]["access"]["properties"]
    assert access["effect"]["enum"] == ["Allow", "Deny"] and access["enabled"]["default"] is True
    clusters = spec["properties"]["scope"]["properties"]["clusters"]["properties"]
    assert clusters["default"]["enum"] == ["allow", "deny", "none"] and clusters["default"]["default"] == "none"
    rule = clusters["rules"]["items"]
    assert rule["required"] == ["selector"]
    assert rule["properties"]["selector"]["properties"]["matchPattern"]["maxLength"] == 256
    resource = rule["properties"]["resources"]["items"]
    assert resource["properties"]["type"]["minLength"] == 1
    assert resource["properties"]["visibility"] == {
        "type": "string",
        "enum": ["all", "none", "filtered"],
        "default": "all",
    }
    account = spec["properties"]["identity"]["properties"]["subjects"]["properties"]["serviceAccounts"]["items"]
    assert account["required"] == ["name"] and account["properties"]["namespace"]["default"] == "default"
    state = _schema()["properties"]["status"]["properties"]["state"]
    assert state["enum"] == ["Active", "Inactive", "Error", "Pending", "Expired"] and state["default"] == "Pending"


def test_crds_rbac_and_plugins_commands_include_the_kind() -> None:
    runner = CliRunner()
    crds = runner.invoke(cli, ["crds"])
    assert crds.exit_code == 0, crds.output
    assert "name: monitoraccesspolicies.clusterpulse.io" in crds.stdout
    rbac = runner.invoke(cli, ["rbac"])
    assert rbac.exit_code == 0, rbac.output
    assert "monitoraccesspolicies/status" in rbac.stdout
    plugins = runner.invoke(cli, ["plugins", "--json"])
    assert plugins.exit_code == 0, plugins.output
    rows = {row["name"]: row for row in json.loads(plugins.stdout)["plugins"]}
    assert rows["policy"]["distribution"] == "clusterpulse-policy"


def test_the_defaults_are_applied_as_the_api_server_does() -> None:
    obj = {
        "spec": {
            "identity": {"subjects": {"serviceAccounts": [{"name": "x"}]}},
            "access": {"effect": "Deny"},
            "scope": {"clusters": {"rules": [{"selector": {}, "resources": [{"type": "pods"}]}]}},
        }
    }
    defaulted = MONITOR_ACCESS_POLICY.with_defaults(obj)
    assert defaulted["spec"]["identity"]["priority"] == 100
    assert defaulted["spec"]["identity"]["subjects"]["serviceAccounts"] == [{"name": "x", "namespace": "default"}]
    assert defaulted["spec"]["access"] == {"effect": "Deny", "enabled": True}
    assert defaulted["spec"]["scope"]["clusters"]["default"] == "none"
    assert defaulted["spec"]["scope"]["clusters"]["rules"][0]["resources"][0]["visibility"] == "all"
