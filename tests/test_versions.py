"""One version source: ``VERSION`` at the root, read by every pyproject of the repository.

The distributions (the core; the model, testing and demo ones under ``model/``, ``testing/`` and
``demo/``; the plugins under ``plugins/``; the test-only plugins under ``tests/plugins/``) declare
``dynamic = ["version"]`` from a ``VERSION`` file that is the root one (the others carry a symlink
to it); the installed metadata says the same; every ``clusterpulse-*`` requirement between them
admits that version; and every plugin declares the core's
``CORE_API_VERSION``, the plugin-contract number (a separate number, see CHANGELOG.md).
"""

from __future__ import annotations

import ast
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from clusterpulse_core import CORE_API_VERSION

ROOT = Path(__file__).resolve().parents[1]
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
PROJECTS = [
    ROOT,
    *(ROOT / folder for folder in ("model", "testing", "demo")),
    *sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml")),
    *sorted(p.parent for p in ROOT.glob("tests/plugins/*/pyproject.toml")),
]


def _pyproject(project: Path) -> dict:  # type: ignore[type-arg]
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_pyproject_reads_the_one_version_file() -> None:
    assert len(PROJECTS) >= 13, PROJECTS
    for project in PROJECTS:
        data = _pyproject(project)
        assert "version" not in data["project"], f"{project}: a hand-written version"
        assert "version" in data["project"].get("dynamic", []), project
        assert data["tool"]["setuptools"]["dynamic"]["version"] == {"file": "VERSION"}, project
        assert (project / "VERSION").resolve() == (ROOT / "VERSION").resolve(), f"{project}/VERSION is not the root's"


def test_the_installed_distributions_carry_it_and_the_plugins_accept_this_core() -> None:
    for project in PROJECTS:
        data = _pyproject(project)
        name = data["project"]["name"]
        assert metadata.version(name) == VERSION, f"{name}: reinstall (bash scripts/setup.sh)"
        for requirement in map(Requirement, data["project"].get("dependencies", [])):
            if requirement.name.startswith("clusterpulse-"):
                assert requirement.specifier.contains(VERSION, prereleases=True), f"{name}: {requirement}"


def test_every_plugin_declares_the_core_api_version() -> None:
    declared = {}
    for project in sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml")):  # the shipped plugins
        for module in project.glob("clusterpulse_*/*.py"):
            for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Assign)
                    and any(getattr(t, "id", "") == "clusterpulse_api_version" for t in node.targets)
                    and isinstance(node.value, ast.Constant)
                ):
                    declared[str(module.relative_to(ROOT))] = node.value.value
    assert declared, "no plugin declares clusterpulse_api_version"
    assert set(declared.values()) == {CORE_API_VERSION}, declared
