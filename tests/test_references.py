"""References resolve inside the repository: code, docs and log lines cite ``docs/compatibility.md#anchor``.

The compatibility decisions were once cited by the spec files they came from (``DECISIONS C3``,
``redis.md §2.4``, ``../shared/...``), which are not in the repository: a user saw "(DECISIONS
C3)" in a log line. This test fails if such a citation comes back, and if a cited anchor of
docs/compatibility.md does not exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPATIBILITY = ROOT / "docs" / "compatibility.md"

#: Citations of documents outside the repository.
OUTSIDE = re.compile(
    r"DECISIONS|(?:redis|controllers|crds|metricsource|readers|policy|collector\.proto)\.md ?§"
    r"|\.\./shared|spec/(?:redis|controllers|crds|metricsource|readers|policy|DECISIONS)\b|§"
)
CITATION = re.compile(r"docs/compatibility\.md((?:#[a-z0-9-]+(?:, | to |–)?)+)")
SKIPPED_DIRS = {
    ".git",
    ".venv",
    ".venv-lowest",
    "build",
    "site",
    "dist",
    "tests",
    "scripts",
    "__pycache__",
    ".tox",
    "node_modules",
}
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".ini", ".cfg"}


def _sources() -> list[Path]:
    """Code, docs and configuration of the repository (tests and scripts are not shipped)."""
    found = []
    stack = [ROOT]
    while stack:
        folder = stack.pop()
        for path in folder.iterdir():
            if path.is_dir():
                if path.name not in SKIPPED_DIRS and not path.name.endswith(".egg-info"):
                    stack.append(path)
            elif path.suffix in SUFFIXES and path.name != "CHANGELOG.md":
                found.append(path)
    return sorted(found)


def _anchors() -> set[str]:
    """The explicit heading ids of docs/compatibility.md (``## C3 Push fallback {#c3}``)."""
    return set(re.findall(r"\{#([a-z0-9-]+)\}", COMPATIBILITY.read_text(encoding="utf-8")))


def _tests() -> list[Path]:
    """The tests' Python files, this one (which names the citations it looks for) left out."""
    this = Path(__file__).resolve()
    return [path for path in sorted((ROOT / "tests").rglob("*.py")) if path != this]


def test_nothing_cites_a_document_outside_the_repository() -> None:
    sources = [*_sources(), *_tests()]
    assert any(path.name == "leader.py" for path in sources), "the walk found no code"
    assert any(path.name == "three_node.py" for path in sources), "the walk found no test"
    bad = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sources
        if path != COMPATIBILITY
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert bad == [], "cite docs/compatibility.md#<anchor> instead:\n" + "\n".join(bad)


def test_every_cited_anchor_of_the_compatibility_page_exists() -> None:
    anchors = _anchors()
    assert {"wire-rules", "c1", "c12", "m13", "r7", "p6"} <= anchors
    cited: dict[str, list[str]] = {}
    for path in [*_sources(), *_tests()]:
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            for anchor in re.findall(r"#([a-z0-9-]+)", match.group(1)):
                cited.setdefault(anchor, []).append(str(path.relative_to(ROOT)))
    assert len(cited) > 20, "the citations were not found"
    missing = {anchor: sorted(set(paths)) for anchor, paths in cited.items() if anchor not in anchors}
    assert missing == {}, f"cited but not defined in docs/compatibility.md: {missing}"
