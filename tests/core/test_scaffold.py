"""``clusterpulse plugin new``: the package it writes installs and passes its own tests.

Bounded cost: the package is installed into this venv with ``--no-deps --no-build-isolation``
(nothing downloaded), its tests run in a subprocess, and it is uninstalled afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "from clusterpulse_core.cli import main; main()"]
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("CLUSTERPULSE_CONFIG", "PYTEST_ADDOPTS")}


def test_the_scaffold_passes_its_own_tests_after_an_editable_install(tmp_path: Path) -> None:
    made = subprocess.run(
        [*CLI, "plugin", "new", "scaffold-check", "--directory", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert made.returncode == 0, made.stderr
    root = tmp_path / "clusterpulse-scaffold-check"
    assert made.stdout == (
        f"created {root}/ (plugin 'scaffold-check'): cd {root} && pip install -e '.[test]' && pytest\n"
    )
    assert (
        'scaffold-check = "clusterpulse_scaffold_check.plugin:ScaffoldCheckPlugin"'
        in (root / "pyproject.toml").read_text()
    )

    installed = subprocess.run(
        [*PIP, "install", "--no-deps", "--no-build-isolation", "-e", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    try:
        tested = subprocess.run(
            [sys.executable, "-m", "pytest", "-q"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
            env=clean_env(),
        )
        assert tested.returncode == 0, tested.stdout + tested.stderr
        assert "3 passed" in tested.stdout  # one of them runs the manager through the public test harness
        listed = subprocess.run(
            [*CLI, "plugins", "--config", "-"],
            input='[clusterpulse]\nplugins = ["scaffold-check"]\n',
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=clean_env(),
        )
        assert listed.returncode == 0, listed.stderr
        assert "scaffold-check" in listed.stdout and "functions: scaffoldCheckTwice" in listed.stdout
    finally:
        subprocess.run([*PIP, "uninstall", "-y", "clusterpulse-scaffold-check"], capture_output=True, timeout=120)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "Bad",
            "error: plugin name 'Bad' is not valid: lower-case letters and digits, words joined by '-' or '_', "
            "starting with a letter, at most 40 characters\n",
        ),
    ],
)
def test_a_bad_name_is_refused(tmp_path: Path, name: str, message: str) -> None:
    result = subprocess.run(
        [*CLI, "plugin", "new", name, "-d", str(tmp_path)], capture_output=True, text=True, timeout=60, env=clean_env()
    )
    assert (result.returncode, result.stderr) == (1, message)
    assert list(tmp_path.iterdir()) == []
