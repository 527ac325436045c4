"""The distributions as a user gets them: wheels of the core and every plugin, installed into a fresh
virtualenv (no editable installs, no test plugins), run `clusterpulse plugins` and the demo.

Also: every distribution's metadata (licence, URLs, classifiers, a core version range), every
imported package declared, and scripts/setup.sh stopping on a pip failure without its stamp.
"""

from __future__ import annotations

import ast
import email
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
PROJECTS = [REPO, *sorted(p.parent for p in REPO.glob("plugins/*/pyproject.toml"))]
BIN = Path(sys.executable).parent


def _run(args: list[str | Path], timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                            **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Wheels of the core and of every plugins/*/ distribution (built from this checkout)."""
    out = tmp_path_factory.mktemp("wheels")
    build = tmp_path_factory.mktemp("build")
    for project in PROJECTS:
        # A copy, so the build leaves no build/ or egg-info behind in the checkout.
        source = build / project.name
        shutil.copytree(project, source, ignore=shutil.ignore_patterns(
            ".venv*", ".git", "tests", "benchmarks", "docs", "deploy", "plugins", "build", "*.egg-info",
            "__pycache__", ".mypy_cache", ".ruff_cache"))
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, source])
    built = sorted(out.glob("*.whl"))
    assert len(built) == len(PROJECTS), built
    return built


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name))


def _dist_name(wheel: Path) -> str:
    return str(_metadata(wheel)["Name"])


@pytest.fixture(scope="module")
def installed(wheels: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheels (the core with its [demo] extra) and their dependencies."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    uv = BIN / "uv"
    _run([uv, "venv", "-q", "--python", sys.executable, venv])
    requirements = [f"{_dist_name(w)}{'[demo]' if _dist_name(w) == 'clusterpulse-core' else ''} @ {w.as_uri()}"
                    for w in wheels]
    _run([uv, "pip", "install", "-q", "--python", venv / "bin" / "python", *requirements])
    _run([uv, "pip", "check", "--python", venv / "bin" / "python"])
    return venv


def test_the_installed_wheels_list_their_plugins_and_no_test_plugins(installed: Path, tmp_path: Path) -> None:
    packages = [p.name for p in (REPO / "plugins").glob("*/clusterpulse_*") if p.suffix != ".egg-info"]
    script = "import importlib, sys; print(*(list(importlib.import_module(m).__path__)[0] for m in sys.argv[1:]))"
    where = _run([installed / "bin" / "python", "-c", script, "clusterpulse_core", *packages], cwd=tmp_path)
    for line in where.stdout.split():
        assert line.startswith(str(installed)), f"not installed from a wheel: {line}"
    result = _run([installed / "bin" / "clusterpulse", "plugins", "--json"], cwd=tmp_path)
    import json

    names = {row["name"]: row["distribution"] for row in json.loads(result.stdout)["plugins"]}
    expected = {"redis", "cluster", "registry", "metricsource", "policy", "vmwriter"}
    assert expected <= set(names)
    assert not [n for n in names if n.startswith("example")], "a test-only plugin is installed"
    plugin_dists = {tomllib_name(p) for p in PROJECTS[1:]}
    assert set(names.values()) <= plugin_dists


def tomllib_name(project: Path) -> str:
    import tomllib

    return str(tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"])


def test_the_demo_runs_from_the_installed_wheels(installed: Path, tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed: sudo apt-get install -y redis-server")
    result = _run([installed / "bin" / "clusterpulse", "demo", "--cycles", "1"], cwd=tmp_path)
    assert "cycle 1: reconciled" in result.stdout
    assert "ocp-prod-east" in result.stdout


def test_every_wheel_carries_licence_urls_classifiers_and_a_core_range(wheels: list[Path]) -> None:
    licence = (REPO / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0" in licence
    for wheel in wheels:
        meta = _metadata(wheel)
        assert meta["License-Expression"] == "Apache-2.0", wheel.name
        assert meta.get_all("Project-URL"), wheel.name
        assert any(c.startswith("Programming Language :: Python :: 3.11") for c in meta.get_all("Classifier") or ())
        with zipfile.ZipFile(wheel) as archive:
            licences = [n for n in archive.namelist() if n.endswith("licenses/LICENSE")]
            assert licences and archive.read(licences[0]).decode() == licence, wheel.name
        requires = meta.get_all("Requires-Dist") or []
        keys = [(re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower(), r.partition(";")[2].strip())
                for r in requires]
        assert len(keys) == len(set(keys)), f"{wheel.name}: a dependency is declared twice: {requires}"
        if meta["Name"] != "clusterpulse-core":
            core = [r for r in requires if r.startswith("clusterpulse-core") and "extra ==" not in r]
            assert core and re.search(r">=[\d.]+,\s*<[\d.]+|<[\d.]+,\s*>=[\d.]+", core[0]), \
                f"{wheel.name}: depend on clusterpulse-core with a version range, got {core}"
        assert not [r for r in requires if "hiredis" in r and not r.startswith("redis")], \
            "hiredis comes with redis[hiredis]"


def _imports(package: Path) -> set[str]:
    found = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_every_imported_package_is_declared(wheels: list[Path]) -> None:
    owners = packages_distributions()
    for wheel in wheels:
        meta = _metadata(wheel)
        declared = {re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower().replace("_", "-")
                    for r in meta.get_all("Requires-Dist") or []}
        declared |= {"redis"} if "redis" in declared else set()
        if any(r.startswith("redis[") or "hiredis" in r for r in meta.get_all("Requires-Dist") or []):
            declared.add("hiredis")
        package = REPO / (meta["Name"].replace("-", "_") if meta["Name"] == "clusterpulse-core" else
                          f"plugins/{meta['Name'].removeprefix('clusterpulse-')}/{meta['Name'].replace('-', '_')}")
        assert package.is_dir(), package
        missing = []
        for module in sorted(_imports(package)):
            if module in sys.stdlib_module_names or module.startswith("clusterpulse_") or module == "__future__":
                continue
            dists = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
            if module.startswith("clusterpulse") or not dists & declared:
                missing.append(f"{module} ({', '.join(sorted(dists))})")
        assert not missing, f"{meta['Name']} imports undeclared packages: {missing}"


def test_setup_sh_demo_installs_the_plugins_the_demo_enables() -> None:
    from clusterpulse_demo.run import DEMO_PLUGINS

    text = (REPO / "scripts" / "setup.sh").read_text()
    listed = re.search(r"^DEMO_PLUGINS=\(([^)]*)\)", text, re.M)
    assert listed, "scripts/setup.sh: DEMO_PLUGINS=(...) not found"
    assert set(DEMO_PLUGINS) <= set(listed.group(1).split())
    assert "|| true" not in text


def test_setup_sh_stops_on_a_pip_failure_and_writes_no_stamp(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    listed = re.search(r"^DEMO_PLUGINS=\(([^)]*)\)", (REPO / "scripts" / "setup.sh").read_text(), re.M)
    assert listed
    for plugin in listed.group(1).split():
        (checkout / "plugins" / plugin).mkdir(parents=True)
        (checkout / "plugins" / plugin / "pyproject.toml").write_text("")
    (checkout / "pyproject.toml").write_text('[project]\nname = "broken"\nversion = "1"\ndependencies = ["x" "y"]\n')
    binaries = tmp_path / "bin"
    binaries.mkdir()
    (binaries / "redis-server").symlink_to(shutil.which("redis-server") or "/bin/true")
    env = {**os.environ, "PATH": f"{binaries}:{os.environ['PATH']}", "PYTHON": sys.executable}
    result = subprocess.run(["bash", "scripts/setup.sh", "--demo"], cwd=checkout, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0
    assert "pip install failed" in result.stderr
    assert "pyproject.toml" in result.stderr or "TOML" in result.stderr, result.stderr[-2000:]
    assert not list((checkout / ".venv").glob(".clusterpulse-*")), "a stamp was written after a failure"
