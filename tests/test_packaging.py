"""The distributions as a user gets them: wheels of the core, the model, the test harness, the demo and
every plugin, installed into fresh virtualenvs (no editable installs, no test plugins).

A production install (the core, the model and the plugins) carries none of the testing or demo
code: not in its wheels, not among its installed files, no test-only dependency, no ``demo`` or
``testing`` command; it runs ``clusterpulse plugins``. The testing and demo wheels added on top
bring ``clusterpulse demo``, which runs.

Also: every distribution's metadata (licence, URLs, classifiers, a core version range), every
imported package declared, and scripts/setup.sh stopping on a pip failure without its stamp.
"""

from __future__ import annotations

import ast
import email
import json
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
#: The distributions of the repository that are not plugins, by folder (the core is the root).
TOOLS = ("testing", "demo")
PROJECTS = [
    REPO,
    REPO / "model",
    *(REPO / tool for tool in TOOLS),
    *sorted(p.parent for p in REPO.glob("plugins/*/pyproject.toml")),
]
BIN = Path(sys.executable).parent
#: What a production install must not carry: the test harness, the demo and what only they need
#: (aiohttp is not among them: the kubernetes client requires it).
TOOL_PACKAGES = ("clusterpulse_testing", "clusterpulse_demo")
TOOL_ONLY_DEPENDENCIES = ("kmock", "pytest", "pytest-timeout")  # cryptography: the ingester makes its TLS CA


#: The environment of the installs under test: without the suite's PYTHONPATH (tests/conftest.py puts
#: the test-only plugins there), so a fresh venv sees only what was installed into it.
CLEAN_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def _run(args: list[str | Path], timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("env", CLEAN_ENV)
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload]
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
        shutil.copytree(
            project,
            source,
            ignore=shutil.ignore_patterns(
                ".venv*",
                ".git",
                "tests",
                "benchmarks",
                "docs",
                "deploy",
                "plugins",
                "model",
                *TOOLS,
                "build",
                "*.egg-info",
                "__pycache__",
                ".mypy_cache",
                ".ruff_cache",
            ),
        )
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


def _is_tool(wheel: Path) -> bool:
    return _dist_name(wheel) in {f"clusterpulse-{tool}" for tool in TOOLS}


def _venv(wheels: list[Path], where: Path) -> Path:
    """A fresh venv with these wheels and their dependencies (from the index, never from the checkout)."""
    venv = where / "venv"
    uv = BIN / "uv"
    _run([uv, "venv", "-q", "--python", sys.executable, venv])
    _run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--python",
            venv / "bin" / "python",
            *(f"{_dist_name(w)} @ {w.as_uri()}" for w in wheels),
        ]
    )
    _run([uv, "pip", "check", "--python", venv / "bin" / "python"])
    return venv


@pytest.fixture(scope="module")
def production(wheels: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A production install: the core, the model and every plugin (what the Containerfile installs)."""
    return _venv([w for w in wheels if not _is_tool(w)], tmp_path_factory.mktemp("production"))


@pytest.fixture(scope="module")
def installed(wheels: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every wheel: the production install plus the test harness and the demo."""
    return _venv(wheels, tmp_path_factory.mktemp("tools"))


def test_the_production_wheels_carry_no_testing_or_demo_code(wheels: list[Path]) -> None:
    production = [w for w in wheels if not _is_tool(w)]
    assert {_dist_name(w) for w in production} == {tomllib_name(p) for p in PROJECTS if p.name not in TOOLS}
    print("\nproduction wheel contents:")
    for wheel in production:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
        packages = sorted({n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")})
        print(f"  {wheel.name}: {len(names)} files, packages {', '.join(packages)}")
        assert len(packages) == 1 and packages[0].startswith("clusterpulse_"), (wheel.name, packages)
        shipped = [
            n
            for n in names
            if n.startswith(TOOL_PACKAGES) or "/testing/" in n or "/demo/" in n or n.endswith((".yaml", ".yml"))
        ]
        assert shipped == [], f"{wheel.name} carries testing or demo files: {shipped[:10]}"
        requires = _metadata(wheel).get_all("Requires-Dist") or []
        needs = [
            r
            for r in requires
            if "extra ==" not in r
            and re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower()
            in (*TOOL_ONLY_DEPENDENCIES, "clusterpulse-testing", "clusterpulse-demo")
        ]
        assert needs == [], f"{wheel.name} needs test or demo dependencies: {needs}"
    tools = {_dist_name(w): w for w in wheels if _is_tool(w)}
    with zipfile.ZipFile(tools["clusterpulse-demo"]) as archive:
        assert any(n.startswith("clusterpulse_demo/fleet/") and n.endswith(".yaml") for n in archive.namelist())


def test_a_production_install_has_no_testing_or_demo_code_nor_commands(production: Path, tmp_path: Path) -> None:
    python = production / "bin" / "python"
    script = (
        "import importlib.metadata as m, importlib.util as u, sys\n"
        "files = [str(f) for d in m.distributions() if (d.metadata['Name'] or '').startswith('clusterpulse')"
        " for f in d.files or ()]\n"
        "print(len(files), *sorted({d.metadata['Name'] for d in m.distributions()}))\n"
        "print(*(f for f in files if f.startswith(tuple(sys.argv[1:]))))\n"
        "print(*(p for p in sys.argv[1:] if u.find_spec(p) is not None))"
    )
    found = _run([python, "-c", script, *TOOL_PACKAGES], cwd=tmp_path).stdout.splitlines()
    count, *names = found[0].split()
    assert int(count) > 100, found[0]
    assert found[1:] == ["", ""], f"testing or demo code installed: {found[1:]}"
    lowered = {n.lower() for n in names}
    assert not lowered & set(TOOL_ONLY_DEPENDENCIES), f"test-only dependencies: {lowered & set(TOOL_ONLY_DEPENDENCIES)}"
    assert {tomllib_name(p) for p in PROJECTS if p.name not in TOOLS} <= lowered
    commands = _run([production / "bin" / "clusterpulse", "--help"], cwd=tmp_path).stdout
    listed = re.findall(r"^  (\S+)", commands.partition("Commands:")[2], re.M)
    assert {"run", "plugins", "config", "crds", "rbac"} <= set(listed), commands
    assert not {"demo", "testing", "plugin"} & set(listed), f"tool commands in a production install: {listed}"
    plugins = _run([production / "bin" / "clusterpulse", "plugins", "--json"], cwd=tmp_path).stdout
    assert {"redis", "cluster", "metricsource"} <= {row["name"] for row in json.loads(plugins)["plugins"]}
    demo = subprocess.run(
        [production / "bin" / "clusterpulse", "demo"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert demo.returncode != 0 and "No such command 'demo'" in demo.stderr, demo.stderr


def test_the_installed_wheels_list_their_plugins_and_no_test_plugins(installed: Path, tmp_path: Path) -> None:
    packages = [p.name for p in (REPO / "plugins").glob("*/clusterpulse_*") if p.suffix != ".egg-info"]
    script = "import importlib, sys; print(*(list(importlib.import_module(m).__path__)[0] for m in sys.argv[1:]))"
    where = _run(
        [
            installed / "bin" / "python",
            "-c",
            script,
            "clusterpulse_core",
            "clusterpulse_model",
            *TOOL_PACKAGES,
            *packages,
        ],
        cwd=tmp_path,
    )
    for line in where.stdout.split():
        assert line.startswith(str(installed)), f"not installed from a wheel: {line}"
    result = _run([installed / "bin" / "clusterpulse", "plugins", "--json"], cwd=tmp_path)
    names = {row["name"]: row["distribution"] for row in json.loads(result.stdout)["plugins"]}
    expected = {"redis", "cluster", "registry", "metricsource", "policy", "vmwriter"}
    assert expected <= set(names)
    assert not [n for n in names if n.startswith("example")], "a test-only plugin is installed"
    plugin_dists = {tomllib_name(p) for p in PROJECTS if p.parent.name == "plugins"}
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
        keys = [(re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower(), r.partition(";")[2].strip()) for r in requires]
        assert len(keys) == len(set(keys)), f"{wheel.name}: a dependency is declared twice: {requires}"
        if meta["Name"] != "clusterpulse-core":
            core = [r for r in requires if r.startswith("clusterpulse-core") and "extra ==" not in r]
            assert core and re.search(r">=[\d.]+,\s*<[\d.]+|<[\d.]+,\s*>=[\d.]+", core[0]), (
                f"{wheel.name}: depend on clusterpulse-core with a version range, got {core}"
            )
        assert not [r for r in requires if "hiredis" in r and not r.startswith("redis")], (
            "hiredis comes with redis[hiredis]"
        )


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
        declared = {
            re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower().replace("_", "-")
            for r in meta.get_all("Requires-Dist") or []
        }
        declared |= {"redis"} if "redis" in declared else set()
        if any(r.startswith("redis[") or "hiredis" in r for r in meta.get_all("Requires-Dist") or []):
            declared.add("hiredis")
        folder = meta["Name"].removeprefix("clusterpulse-")
        package = (
            REPO
            / (
                ""
                if folder == "core"
                else folder
                if (REPO / folder / "pyproject.toml").is_file()
                else f"plugins/{folder}"
            )
            / meta["Name"].replace("-", "_")
        )
        assert package.is_dir(), package
        missing = []
        for module in sorted(_imports(package)):
            if module.startswith("clusterpulse_"):
                dist = module.replace("_", "-")
                # The core's domain hooks still name model types (lazily); they move to their plugins.
                if (
                    dist not in declared
                    and module != package.name
                    and (package.name, module) != ("clusterpulse_core", "clusterpulse_model")
                ):
                    missing.append(f"{module} ({dist})")
                continue
            if module in sys.stdlib_module_names or module == "__future__":
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
    import tomllib

    demo = tomllib.loads((REPO / "demo" / "pyproject.toml").read_text())["project"]["dependencies"]
    needed = {f"clusterpulse-{plugin}" for plugin in DEMO_PLUGINS}
    assert needed <= {re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0] for r in demo}, (
        "clusterpulse-demo depends on every plugin the demo enables"
    )


def test_setup_sh_stops_on_a_pip_failure_and_writes_no_stamp(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    listed = re.search(r"^DEMO_PLUGINS=\(([^)]*)\)", (REPO / "scripts" / "setup.sh").read_text(), re.M)
    assert listed
    for project in [*(f"plugins/{plugin}" for plugin in listed.group(1).split()), "model", *TOOLS]:
        (checkout / project).mkdir(parents=True)
        (checkout / project / "pyproject.toml").write_text("")
    (checkout / "pyproject.toml").write_text('[project]\nname = "broken"\nversion = "1"\ndependencies = ["x" "y"]\n')
    binaries = tmp_path / "bin"
    binaries.mkdir()
    (binaries / "redis-server").symlink_to(shutil.which("redis-server") or "/bin/true")
    env = {**os.environ, "PATH": f"{binaries}:{os.environ['PATH']}", "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", "scripts/setup.sh", "--demo"], cwd=checkout, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    steps = re.findall(r"^setup: \[(\d)/(\d)\] (.*)$", result.stderr, re.M)
    assert [(n, m) for n, m, _what in steps] == [("1", "3"), ("2", "3"), ("3", "3")], result.stderr[-2000:]
    assert "installing Python packages" in steps[-1][2]  # what it is installing, step n of m: never silent
    assert "pip install failed" in result.stderr
    assert "pyproject.toml" in result.stderr or "TOML" in result.stderr, result.stderr[-2000:]
    assert not list((checkout / ".venv").glob(".clusterpulse-*")), "a stamp was written after a failure"


def test_the_test_only_plugins_are_not_in_the_users_venv(tmp_path: Path) -> None:
    """scripts/setup.sh keeps them out of .venv; the suite finds them in tests/plugins/.site (tests/conftest.py)."""
    from clusterpulse_core.plugins import installed_plugins

    test_only = {"clusterpulse-example", "clusterpulse-configaudit"}
    assert {
        p.name.lower() for p in (REPO / "tests" / "plugins").glob("*/pyproject.toml") for p in [p.parent]
    } == test_only
    seen = {plugin.distribution for plugin in installed_plugins()}
    assert test_only <= seen, "the suite sees the test-only plugins"
    user = _run([BIN / "clusterpulse", "plugins", "--json"], cwd=tmp_path)  # as the user runs it: no PYTHONPATH
    distributions = {row["distribution"] for row in json.loads(user.stdout)["plugins"]}
    assert not test_only & distributions, f"test-only plugins in {BIN.parent}: {test_only & distributions}"
    assert {"clusterpulse-redis", "clusterpulse-cluster"} <= distributions
