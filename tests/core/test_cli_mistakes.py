"""Every mistake gets one clear line: the CLI run as a user runs it (exit status and exact first line).

Real subprocesses, real plugins (the example plugins under ``tests/plugins``), the API emulator as
the hub, a closed loopback port as an unreachable hub or Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path

import requests
import yaml
from clusterpulse_demo.run import REDIS_CHECK_TIMEOUT
from clusterpulse_testing.kube_api import KubeAPI
from clusterpulse_testing.polling import STARTUP, eventually
from clusterpulse_testing.servers import free_port

from clusterpulse_core.plugins import installed_plugins

CLI = [sys.executable, "-c", "from clusterpulse_core.cli import main; main()"]
ENV_SET_BY_TESTS = ("CLUSTERPULSE_CONFIG", "NAMESPACE", "VM_ENABLED", "LOG_LEVEL", "KUBECONFIG")


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ENV_SET_BY_TESTS}
    full_env.update(env or {})
    return subprocess.run(CLI + args, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, input="")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def unreachable_kubeconfig(folder: Path) -> tuple[Path, str]:
    """A kubeconfig naming a loopback port nothing listens on."""
    url = f"https://127.0.0.1:{free_port()}"
    path = write(
        folder,
        "unreachable.kubeconfig",
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{url}", insecure-skip-tls-verify: true}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
users: [{{name: u, user: {{token: t}}}}]
""",
    )
    return path, url


def test_run_once_against_an_unreachable_hub_is_one_error_line(tmp_path: Path) -> None:
    kubeconfig, url = unreachable_kubeconfig(tmp_path)
    write(tmp_path, "clusterpulse.toml", f'[clusterpulse]\nplugins = ["example"]\nkubeconfig = "{kubeconfig}"\n')
    result = run(["run", "--once"], tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(
        f"error: cannot reach the hub API at {url}: GET "
        "/apis/example.clusterpulse.io/v1/namespaces/clusterpulse/greetings: "
    ), lines
    assert [line for line in lines if line.startswith("error:")] == lines[:1]
    assert "Traceback" not in result.stderr


def test_an_unexpected_failure_shows_its_traceback_only_with_debug(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example", "example-raising"]\n')
    result = run(["example-raise"], tmp_path)
    assert (result.returncode, result.stderr) == (
        1,
        "error: RuntimeError: example-raise always fails (--debug shows the traceback)\n",
    )
    for args, env in (
        (["example-raise", "--debug"], {}),
        (["--debug", "example-raise"], {}),
        (["example-raise"], {"LOG_LEVEL": "debug"}),
    ):
        result = run(args, tmp_path, env=env)
        assert result.returncode == 1, args
        assert "Traceback (most recent call last)" in result.stderr, (args, env)
        assert result.stderr.splitlines()[-1] == "RuntimeError: example-raise always fails"


def test_demo_fails_fast_on_an_unreachable_redis(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    # The process's start-up (imports, plugin discovery) is the machine's; the check itself is
    # bounded by the demo's REDIS_CHECK_TIMEOUT. "Fast" is that nothing started before the error:
    # no output (the demo prints its hub and fleet first thing after the check).
    result = run(["demo", "--redis-url", url], tmp_path, timeout=STARTUP + REDIS_CHECK_TIMEOUT)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: --redis-url {url}: Redis does not answer: Error 111 connecting to {url[8:-2]}. Connection refused."
    ]


def test_run_once_names_a_missing_crd_and_fails(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example"]\n')
    with KubeAPI() as hub:
        hub.write_kubeconfig(tmp_path / "kubeconfig")
        result = run(["run", "--once"], tmp_path, env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "error: kind Greeting is not served by the hub: its CRD greetings.example.clusterpulse.io is not "
        "installed (clusterpulse crds | kubectl apply -f -)"
    )


BAD_CONFIG = """[clusterpulse]
plugins = ["example", "redis"]
request_timeout = 0
queue_qps = -1
shutdown_grace = -2
workers = {Greetin = 3}
leader_elect = true
renew_deadline = 20.0
loglevel = "debug"

[plugins.redis]
url = "redis://redis:6379/abc"
"""
BAD_CONFIG_PROBLEMS = [
    "clusterpulse.loglevel: unknown key (did you mean 'log_level'? expected one of: plugins, namespace, log_level, "
    "kubeconfig, leader_elect, lease_duration, renew_deadline, retry_period, sharding, shard_handover_delay, "
    "shard_dead_after, metrics_bind_address, health_probe_bind_address, probe_request_timeout, "
    "probe_max_connections, resync_period, watch_timeout, "
    "watch_silence_limit, queue_base_delay, queue_max_delay, queue_qps, queue_burst, shutdown_grace, "
    "ghost_sweep_interval, "
    "request_timeout, max_response_bytes, reconcile_timeout, event_interval, cluster_max_in_flight, "
    "client_max_idle, endpoint_allow_list, require_secret_label, workers)",
    "clusterpulse.queue_qps: expected a value > 0, got -1.0",
    "clusterpulse.shutdown_grace: expected a value >= 0, got -2.0",
    "clusterpulse.request_timeout: expected a value > 0, got 0.0",
    "clusterpulse.renew_deadline: must be less than lease_duration (15), got 20",
    "plugins.redis.url: the database (the URL's path) must be a number such as /0, got 'redis://redis:6379/abc'",
    "clusterpulse.workers.Greetin: no enabled plugin declares this kind (did you mean 'Greeting'? kinds: Greeting)",
]


def test_config_check_and_run_report_the_same_problems_all_at_once(tmp_path: Path) -> None:
    write(tmp_path, "bad.toml", BAD_CONFIG)
    check = run(["config", "check", "bad.toml"], tmp_path)
    assert (check.returncode, check.stdout) == (1, "")
    assert check.stderr.splitlines() == [f"error: bad.toml: {problem}" for problem in BAD_CONFIG_PROBLEMS]
    for args in (["run", "--config", "bad.toml"], ["run", "--once", "--config", "bad.toml"]):
        result = run(args, tmp_path)
        assert (result.returncode, result.stdout) == (1, ""), args
        assert result.stderr.splitlines() == [f"error: {problem}" for problem in BAD_CONFIG_PROBLEMS], args


def test_redis_url_scheme_and_cluster_db_are_checked(tmp_path: Path) -> None:
    for url, problem in (
        (
            "redsi://redis:6379/0",
            "expected a URL starting with redis://, rediss://, unix://, redis+cluster://, "
            "rediss+cluster://, got 'redsi://redis:6379/0'",
        ),
        ("redis://:6379/0", "expected a host in the URL, e.g. redis://redis:6379/0, got 'redis://:6379/0'"),
        ("redis+cluster://redis:6379/2", "a Redis Cluster has only database 0, got 'redis+cluster://redis:6379/2'"),
    ):
        write(tmp_path, "c.toml", f'[clusterpulse]\nplugins = ["redis"]\n[plugins.redis]\nurl = "{url}"\n')
        result = run(["config", "check", "c.toml"], tmp_path)
        assert (result.returncode, result.stderr) == (1, f"error: c.toml: plugins.redis.url: {problem}\n"), url
    write(tmp_path, "c.toml", '[clusterpulse]\nplugins = ["redis"]\n[plugins.redis]\nurl = "rediss://redis:6380/3"\n')
    assert run(["config", "check", "c.toml"], tmp_path).stdout == "c.toml: ok\n"


def test_plugin_names_get_did_you_mean_and_no_advice_for_unpublished_names(tmp_path: Path) -> None:
    installed = ", ".join(plugin.name for plugin in installed_plugins())
    expected = {
        "clustr": f"plugin 'clustr' is enabled but not installed (did you mean 'cluster'? installed plugins: "
        f"{installed})",
        "nosuch": f"plugin 'nosuch' is enabled but not installed (installed plugins: {installed})",
        "core": "plugin 'core' is enabled but not found: distribution clusterpulse-core "
        f"{version('clusterpulse-core')} is installed without an entry point named 'core' in the group "
        "'clusterpulse.plugins' (it declares: none; add [project.entry-points.\"clusterpulse.plugins\"] "
        'core = "module:Plugin" to its pyproject.toml and reinstall it)',
    }
    for name, problem in expected.items():
        write(tmp_path, "c.toml", f'[clusterpulse]\nplugins = ["{name}"]\n')
        result = run(["config", "check", "c.toml"], tmp_path)
        assert (result.returncode, result.stderr) == (1, f"error: c.toml: {problem}\n"), name
        assert "pip install" not in result.stderr
    write(tmp_path, "c.toml", '[clusterpulse]\nplugins = ["clusterpulse-example"]\n')
    first = run(["config", "check", "c.toml"], tmp_path).stderr.splitlines()[0]
    assert first.startswith(
        "error: c.toml: plugin 'clusterpulse-example' is enabled but not found: did you mean "
        "'example'? distribution clusterpulse-example 0.1.0 is installed without an entry "
        "point named 'clusterpulse-example'"
    ), first


def test_rbac_read_needs_managed_and_resolves_groups_or_refuses(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example"]\n')
    result = run(["rbac", "--read", "apps/statefulsets"], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "error: --read needs --managed (it is about the managed-cluster side)\n",
    )

    result = run(
        ["rbac", "--managed", "--read", "jobs", "--read", "greetings", "--read", "example.io/widgets"], tmp_path
    )
    assert result.returncode == 0, result.stderr
    role = next(doc for doc in yaml.safe_load_all(result.stdout) if doc["kind"] == "ClusterRole")
    reads = {
        (rule["apiGroups"][0], resource)
        for rule in role["rules"]
        if "apiGroups" in rule
        for resource in rule["resources"]
        if rule["verbs"] == ["get", "list"]
    }
    assert {("batch", "jobs"), ("example.clusterpulse.io", "greetings"), ("example.io", "widgets")} <= reads
    assert ("", "jobs") not in reads

    result = run(["rbac", "--managed", "--read", "jbos", "--read", "apps/jobs", "--read", "widgets"], tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "error: --read jbos: not a built-in resource nor one of the enabled kinds (did you mean 'jobs'? a custom "
        "resource needs its group: GROUP/jbos)",
        "error: --read apps/jobs: jobs is in the 'batch' group: --read batch/jobs",
        "error: --read widgets: not a built-in resource nor one of the enabled kinds (a custom resource needs its "
        "group: GROUP/widgets)",
    ]


#: The args of the Go manager's Deployment (the kubebuilder manifest upstream ships), with free
#: loopback ports in place of :8080/:8081 and the watch namespace passed as a flag.
GO_MANAGER_ARGS = [
    "--leader-elect",
    "--health-probe-bind-address=127.0.0.1:{health}",
    "--metrics-bind-address=127.0.0.1:{metrics}",
    "--namespace={namespace}",
]


def test_run_accepts_the_go_manager_deployment_args(tmp_path: Path) -> None:
    lease_duration, reconcile_timeout = 2.0, 20.0
    write(
        tmp_path,
        "clusterpulse.toml",
        f'[clusterpulse]\nplugins = ["example"]\nnamespace = "ignored"\n'
        f"lease_duration = {lease_duration}\nrenew_deadline = 1.5\n"
        f"retry_period = 0.25\nreconcile_timeout = {reconcile_timeout}\n",
    )
    health, metrics, namespace = free_port(), free_port(), "go-args"
    args = [arg.format(health=health, metrics=metrics, namespace=namespace) for arg in GO_MANAGER_ARGS]
    bound = reconcile_timeout + 5 * lease_duration
    with KubeAPI() as hub:
        hub.add_crd("example.clusterpulse.io", "v1", "Greeting", "greetings")
        hub.seed(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                {
                    "apiVersion": "example.clusterpulse.io/v1",
                    "kind": "Greeting",
                    "metadata": {"name": "world", "namespace": namespace},
                    "spec": {"to": "world"},
                },
            ]
        )
        hub.write_kubeconfig(tmp_path / "kubeconfig")
        env = {k: v for k, v in os.environ.items() if k not in ENV_SET_BY_TESTS}
        env["KUBECONFIG"] = str(tmp_path / "kubeconfig")
        proc = subprocess.Popen(
            [*CLI, "run", *args],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            def greeted() -> bool:
                assert proc.poll() is None, proc.communicate()
                obj = hub.get("example.clusterpulse.io/v1", "greetings", "world", namespace) or {}
                return (obj.get("status") or {}).get("phase") == "Greeted"

            eventually(greeted, "the Greeting in the --namespace to be reconciled", bound)
            lease = hub.get("coordination.k8s.io/v1", "leases", "cluster-controller.clusterpulse.io", namespace)
            assert lease is not None and lease["spec"]["holderIdentity"], lease
            assert requests.get(f"http://127.0.0.1:{health}/readyz", timeout=5).status_code == 200
            assert (
                "controller_runtime_reconcile_total"
                in requests.get(f"http://127.0.0.1:{metrics}/metrics", timeout=5).text
            )
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=bound)
    assert proc.returncode == 0, err


BAD_REGISTER = (
    "plugin 'example-badregister' failed in clusterpulse_register_functions: ValueError: "
    "example-badregister cannot register its functions"
)


def test_a_raising_registration_hook_marks_its_plugin_broken_and_the_cli_works(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example", "example-badregister"]\n')
    result = run(["--help"], tmp_path)
    assert (result.returncode, result.stderr) == (0, f"warning: {BAD_REGISTER}\n")
    assert "example" in result.stdout.split("Commands:")[1]
    result = run(["example"], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "hello\n", f"warning: {BAD_REGISTER}\n")
    result = run(["plugins"], tmp_path)
    assert result.returncode == 1
    assert "example-badregister  clusterpulse-example 0.1.0 (enabled, BROKEN)" in result.stdout
    assert f"    error: {BAD_REGISTER}" in result.stdout.splitlines()
    result = run(["run", "--once"], tmp_path)
    assert (result.returncode, result.stderr) == (1, f"error: {BAD_REGISTER}\n")


def test_a_missing_hookimpl_or_api_version_is_a_load_warning(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example", "example-undecorated"]\n')
    warnings = [
        "plugin 'example-undecorated': clusterpulse_register_functions is not marked with @hookimpl, so it is "
        "never called (decorate it with `from clusterpulse_core import hookimpl`)",
        "plugin 'example-undecorated' does not declare clusterpulse_api_version (add `clusterpulse_api_version = "
        "1`, the core API it is written for)",
    ]
    result = run(["example"], tmp_path)
    assert (result.returncode, result.stdout) == (0, "hello\n")
    assert result.stderr.splitlines() == [f"warning: {warning}" for warning in warnings]
    result = run(["config", "check"], tmp_path)
    assert (result.returncode, result.stdout) == (0, "clusterpulse.toml: ok\n")
    assert result.stderr.splitlines() == [f"warning: clusterpulse.toml: {warning}" for warning in warnings]


def test_a_raising_reconcile_logs_its_traceback_once_per_distinct_error(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["example-crash"]\n')
    with KubeAPI() as hub:
        hub.add_crd("example.clusterpulse.io", "v1", "Crash", "crashes")
        hub.seed(
            [
                {
                    "apiVersion": "example.clusterpulse.io/v1",
                    "kind": "Crash",
                    "metadata": {"name": name, "namespace": "clusterpulse"},
                }
                for name in ("one", "two")
            ]
        )
        hub.write_kubeconfig(tmp_path / "kubeconfig")
        result = run(["run", "--once"], tmp_path, env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert result.returncode == 1
    failed = [line for line in result.stderr.splitlines() if "reconcile failed" in line]
    assert len(failed) == 2 and all(line.endswith("reconcile failed (KeyError: 'spec.target')") for line in failed)
    assert result.stderr.count("Traceback (most recent call last)") == 1
    assert (
        'in clusterpulse_reconcile\n    return ReconcileResult(requeue_after=float(obj["spec.target"]))'
        in result.stderr
    )


MEDIAN_SOURCE = """apiVersion: clusterpulse.io/v1alpha1
kind: MetricSource
metadata: {name: pods, namespace: clusterpulse}
spec:
  source: {apiVersion: v1, kind: Pod}
  fields:
  - {name: restarts, path: .status.restarts, type: integer}
  aggregations:
  - {name: medianRestarts, field: restarts, function: median}
  rbac: {resourceTypeName: pods}
"""


def test_an_aggregation_naming_an_unregistered_function_is_a_compile_error(tmp_path: Path) -> None:
    write(tmp_path, "clusterpulse.toml", '[clusterpulse]\nplugins = ["metricsource"]\n')
    write(tmp_path, "median.yaml", MEDIAN_SOURCE)
    result = subprocess.run(
        [*CLI, "metricsource", "eval", "-f", "median.yaml", "--objects", "-"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k not in ENV_SET_BY_TESTS},
        capture_output=True,
        text=True,
        timeout=120,
        input='{"items": []}',
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "error: median.yaml:9: spec.aggregations[0].function: unknown aggregation function 'median' "
        "(did you mean 'min'? registered: avg, count, distinct, max, min, percentile, sum)\n",
    )


def test_run_names_a_missing_crd_in_its_retries(tmp_path: Path) -> None:
    request_timeout = 5.0
    write(
        tmp_path,
        "clusterpulse.toml",
        '[clusterpulse]\nplugins = ["example"]\nmetrics_bind_address = "0"\n'
        f'health_probe_bind_address = "0"\nrequest_timeout = {request_timeout}\n',
    )
    expected = (
        "list/watch of Greeting failed: kind Greeting is not served by the hub: its CRD "
        "greetings.example.clusterpulse.io is not installed (clusterpulse crds | kubectl apply -f -)"
    )
    with KubeAPI() as hub:
        hub.write_kubeconfig(tmp_path / "kubeconfig")
        env = {k: v for k, v in os.environ.items() if k not in ENV_SET_BY_TESTS}
        env["KUBECONFIG"] = str(tmp_path / "kubeconfig")
        proc = subprocess.Popen(
            [*CLI, "run"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        # The first list fails at once; bound the wait by a few API calls' deadline plus start-up.
        stopper = threading.Timer(12 * request_timeout, proc.terminate)
        stopper.start()
        try:
            assert proc.stderr is not None
            seen: list[str] = []
            for line in proc.stderr:
                seen.append(line)
                if expected in line:
                    break
            assert any(expected in line for line in seen), "".join(seen)
        finally:
            stopper.cancel()
            proc.terminate()
            proc.communicate(timeout=60)
