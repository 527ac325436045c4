"""The lock files pin every third-party dependency the pyprojects declare, with hashes, and the
set-up script and the Containerfile install from them (scripts/lock.sh regenerates them)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).parent.parent
LOCKS = {"test": REPO / "requirements" / "test.lock", "runtime": REPO / "requirements" / "runtime.lock"}
#: Markers are evaluated as the lock was resolved: CPython 3.11 on Linux (scripts/lock.sh).
ENVIRONMENT = {
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "platform_machine": "x86_64",
}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def pins(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of every pin in a lock file."""
    found: dict[str, tuple[str, int]] = {}
    current = ""
    for line in path.read_text().splitlines():
        match = _PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            found[current] = (match.group(2), 0)
        elif line.strip().startswith("--hash=sha256:") and current:
            version, count = found[current]
            found[current] = (version, count + 1)
    return found


#: What the Containerfile builds (a production install: no testing/ nor demo/, no test plugins).
RUNTIME_PROJECTS = ("pyproject.toml", "model/pyproject.toml", "plugins/*/pyproject.toml")
TEST_PROJECTS = (*RUNTIME_PROJECTS, "testing/pyproject.toml", "demo/pyproject.toml", "tests/plugins/*/pyproject.toml")


def projects(globs: tuple[str, ...] = TEST_PROJECTS) -> list[dict]:  # type: ignore[type-arg]
    paths = [path for pattern in globs for path in sorted(REPO.glob(pattern))]
    assert len(paths) >= len(globs)
    return [tomllib.loads(path.read_text())["project"] for path in paths]


def ours() -> set[str]:
    return {canonicalize_name(project["name"]) for project in projects()}


def declared(extras: bool) -> list[Requirement]:
    """Every requirement of the test environment's pyprojects with their testing/dev/demo extras
    (``extras``), or of the Containerfile's without extras."""
    found = []
    for project in projects(TEST_PROJECTS if extras else RUNTIME_PROJECTS):
        texts = list(project.get("dependencies", []))
        if extras:
            for name in ("testing", "dev", "demo"):
                texts += project.get("optional-dependencies", {}).get(name, [])
        found += [Requirement(text) for text in texts]
    return found


@pytest.mark.parametrize("which", sorted(LOCKS))
def test_every_pin_carries_hashes_and_none_is_ours(which: str) -> None:
    locked = pins(LOCKS[which])
    assert len(locked) > 10
    assert not [name for name, (_version, hashes) in locked.items() if hashes == 0]
    assert not set(locked) & ours(), "our own distributions are installed from the sources, not locked"
    assert "-e " not in LOCKS[which].read_text()


@pytest.mark.parametrize(("which", "extras"), [("runtime", False), ("test", True)])
def test_every_declared_dependency_is_locked_within_its_range(which: str, extras: bool) -> None:
    locked = pins(LOCKS[which])
    problems = []
    for requirement in declared(extras):
        name = canonicalize_name(requirement.name)
        if name in ours() or (requirement.marker and not requirement.marker.evaluate(ENVIRONMENT)):
            continue
        if name not in locked:
            problems.append(f"{requirement}: not in requirements/{which}.lock")
        elif not requirement.specifier.contains(locked[name][0], prereleases=True):
            problems.append(f"{requirement}: locked at {locked[name][0]}")
    assert not problems, "stale lock, run `bash scripts/lock.sh`:\n" + "\n".join(problems)


def test_the_runtime_lock_agrees_with_the_test_lock() -> None:
    test, runtime = pins(LOCKS["test"]), pins(LOCKS["runtime"])
    assert set(runtime) <= set(test)
    assert {name: version for name, (version, _) in runtime.items()} == {name: test[name][0] for name in runtime}


def test_setup_installs_the_test_lock_with_hashes_and_ours_without_dependencies() -> None:
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "pip_install --require-hashes -r requirements/test.lock" in setup
    assert 'pip_install --no-deps "${packages[@]}"' in setup
    assert "python -m pip check" in setup
