"""The dry-run commands as users run them: ``clusterpulse metricsource eval`` and ``clusterpulse expr``.

Each test runs the real command line in a child process, in a folder whose ``clusterpulse.toml``
enables the plugins under test (``example`` is the third-party plugin of
tests/plugins/clusterpulse-example, which registers the function ``shout``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from clusterpulse_testing.vectors import same_value

MAIN = "from clusterpulse_core.cli import main; main()"
RUN_TIMEOUT_SECONDS = 60

METRIC_SOURCE_YAML = """\
apiVersion: clusterpulse.io/v1alpha1
kind: MetricSource
metadata:
  name: pvc-usage
  namespace: clusterpulse
spec:
  source:
    apiVersion: v1
    kind: PersistentVolumeClaim
    namespaces:
      exclude: ["kube-*"]
  fields:
    - name: capacity
      path: .status.capacity.storage
      type: quantity
    - name: requested
      path: .spec.resources.requests.storage
      type: quantity
    - name: phase
      path: .status.phase
    - name: storageClass
      path: .spec.storageClassName
      default: standard
  computed:
    - name: ratio
      expression: round(requested / capacity * 100, 2)
    - name: label
      expression: concat(storageClass, '/', lower(phase))
      type: string
  aggregations:
    - name: bound
      function: count
      filter: {field: phase, operator: equals, value: Bound}
    - name: boundCapacityByClass
      field: capacity
      function: sum
      filter: {field: phase, operator: equals, value: Bound}
      groupBy: storageClass
"""

GI = 1024**3


def pvc(
    namespace: str, name: str, requested: str, capacity: str | None, phase: str, storage_class: str | None = None
) -> dict[str, Any]:
    """A PersistentVolumeClaim as ``kubectl get pvc -o json`` prints it (the parts that matter)."""
    spec: dict[str, Any] = {"resources": {"requests": {"storage": requested}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    status: dict[str, Any] = {"phase": phase}
    if capacity:
        status["capacity"] = {"storage": capacity}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": spec,
        "status": status,
    }


CLAIMS = [
    pvc("team-a", "data", "5Gi", "10Gi", "Bound", "fast"),
    pvc("team-a", "logs", "500Mi", "1Gi", "Bound"),
    pvc("team-b", "scratch", "2Gi", None, "Pending", "fast"),
    pvc("kube-system", "etcd", "1Gi", "1Gi", "Bound", "fast"),  # excluded by the source's namespaces
]

DATA = {
    "_id": "team-a/data",
    "_name": "data",
    "_namespace": "team-a",
    "_labels": {"app": "data"},
    "values": {
        "capacity": 10.0 * GI,
        "requested": 5.0 * GI,
        "phase": "Bound",
        "storageClass": "fast",
        "ratio": 50.0,
        "label": "fast/bound",
    },
}
LOGS = {
    "_id": "team-a/logs",
    "_name": "logs",
    "_namespace": "team-a",
    "_labels": {"app": "logs"},
    "values": {
        "capacity": 1.0 * GI,
        "requested": 500.0 * 1024**2,
        "phase": "Bound",
        "storageClass": "standard",  # the field's default
        "ratio": 48.83,  # 500Mi / 1Gi * 100 = 48.828125
        "label": "standard/bound",
    },
}
# No capacity: requested / null divides by zero, which is null (M3), and null * 100 counts null as 0.
SCRATCH = {
    "_id": "team-b/scratch",
    "_name": "scratch",
    "_namespace": "team-b",
    "_labels": {"app": "scratch"},
    "values": {
        "capacity": None,
        "requested": 2.0 * GI,
        "phase": "Pending",
        "storageClass": "fast",
        "ratio": 0.0,
        "label": "fast/pending",
    },
}


@attrs.frozen
class Result:
    """What one command printed and its exit status."""

    code: int
    out: str
    err: str


@attrs.frozen
class Workdir:
    """A folder with a ``clusterpulse.toml``, where the command line runs."""

    path: Path

    def write(self, name: str, content: str | Any) -> str:
        """Write a file (text as is, anything else as JSON); returns its name."""
        text = content if isinstance(content, str) else json.dumps(content, indent=2)
        (self.path / name).write_text(text)
        return name

    def run(self, *args: str) -> Result:
        """``clusterpulse ARGS`` in this folder; the machine's environment does not leak in."""
        done = subprocess.run(
            [sys.executable, "-c", MAIN, *args],
            cwd=self.path,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECONDS,
            check=False,
            # PYTHONPATH: where tests/conftest.py installed the test-only plugins (the example's function).
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        )
        return Result(done.returncode, done.stdout, done.stderr)


def workdir(path: Path, plugins: list[str]) -> Workdir:
    """A working folder whose config enables ``plugins``."""
    (path / "clusterpulse.toml").write_text(f"[clusterpulse]\nplugins = {json.dumps(plugins)}\n")
    return Workdir(path)


@pytest.fixture
def work(tmp_path: Path) -> Workdir:
    """A working folder enabling ``metricsource`` and the third-party ``example`` plugin."""
    return workdir(tmp_path, ["metricsource", "example"])


def dry_run(work: Workdir, objects: Any, *extra: str, definition: str = METRIC_SOURCE_YAML) -> Result:
    """``metricsource eval -f ms.yaml --objects dump.json [extra]`` over ``objects``."""
    work.write("ms.yaml", definition)
    work.write("dump.json", objects)
    return work.run("metricsource", "eval", "-f", "ms.yaml", "--objects", "dump.json", *extra)


def test_eval_over_a_list_prints_the_stored_resources_and_aggregations(work: Workdir) -> None:
    dump = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": CLAIMS}
    result = dry_run(work, dump)
    assert (result.code, result.err) == (0, "")
    printed = json.loads(result.out)
    assert list(printed) == ["resources", "aggregations"]
    resources = printed["resources"]
    assert [r["_id"] for r in resources] == ["team-a/data", "team-a/logs", "team-b/scratch"]
    for got, want in zip(resources, [DATA, LOGS, SCRATCH], strict=True):
        assert same_value(got, want), (got, want)
    assert same_value(
        printed["aggregations"],
        {
            "bound": 2.0,
            "boundCapacityByClass": {"fast": 10.0 * GI, "standard": 1.0 * GI},  # Pending scratch filtered out
        },
    ), printed["aggregations"]


def test_eval_over_a_single_object(work: Workdir) -> None:
    result = dry_run(work, CLAIMS[0])
    assert result.code == 0, result.err
    printed = json.loads(result.out)
    assert same_value(
        printed, {"resources": [DATA], "aggregations": {"bound": 1.0, "boundCapacityByClass": {"fast": 10.0 * GI}}}
    )


def test_eval_table(work: Workdir) -> None:
    result = dry_run(work, {"kind": "List", "items": CLAIMS}, "--table")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "RESOURCE        CAPACITY       REQUESTED     PHASE    STORAGECLASS  RATIO  LABEL",
        "team-a/data     10737418240.0  5368709120.0  Bound    fast          50.0   fast/bound",
        "team-a/logs     1073741824.0   524288000.0   Bound    standard      48.83  standard/bound",
        "team-b/scratch  <none>         2147483648.0  Pending  fast          0.0    fast/pending",
        "",
        "bound: 2.0",
        'boundCapacityByClass: {"fast":10737418240.0,"standard":1073741824.0}',
    ]


def test_a_compile_error_names_the_yaml_line_and_field(work: Workdir) -> None:
    broken = METRIC_SOURCE_YAML.replace("concat(storageClass", "nosuch(storageClass")
    line = next(number for number, text in enumerate(broken.splitlines(), start=1) if "nosuch(" in text)
    result = dry_run(work, CLAIMS[0], definition=broken)
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"error: ms.yaml:{line}: spec.computed[1].expression: unknown function: nosuch at position 0\n"
    )


def test_a_third_party_function_comes_from_the_config(work: Workdir) -> None:
    shouting = METRIC_SOURCE_YAML.replace("concat(storageClass, '/', lower(phase))", "shout(storageClass)")
    result = dry_run(work, CLAIMS[0], definition=shouting)
    assert result.code == 0, result.err
    [resource] = json.loads(result.out)["resources"]
    assert resource["values"]["label"] == "FAST!"


def test_a_plugin_the_config_does_not_enable_contributes_nothing(tmp_path: Path) -> None:
    alone = workdir(tmp_path, ["metricsource"])
    shouting = METRIC_SOURCE_YAML.replace("concat(storageClass, '/', lower(phase))", "shout(storageClass)")
    result = dry_run(alone, CLAIMS[0], definition=shouting)
    assert result.code == 1
    assert "spec.computed[1].expression: unknown function: shout" in result.err
    assert alone.run("expr", "shout('hi')").code == 1


def test_eval_has_no_plugin_option(work: Workdir) -> None:
    result = dry_run(work, CLAIMS[0], "--plugin", "example")
    assert result.code == 2
    # click >= 8.4 quotes the option ("No such option '--plugin'"), older ones don't.
    assert "No such option" in result.err and "--plugin" in result.err


def test_expr_with_variables(work: Workdir) -> None:
    result = work.run("expr", "round(used / capacity * 100, 2)", "--var", "used=3", "--var", "capacity=7")
    assert (result.code, result.out, result.err) == (0, "42.86\n", "")


def test_expr_with_the_example_plugins_function(work: Workdir) -> None:
    result = work.run("expr", "shout('hi')")
    assert (result.code, result.out, result.err) == (0, '"HI!"\n', "")
