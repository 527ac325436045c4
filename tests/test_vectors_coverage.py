"""Every group of every vector file is run by some test, or listed as pending with a reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from clusterpulse_testing.vectors import FILES, groups

TESTS = Path(__file__).parent
PENDING = TESTS / "vectors_pending.txt"


def _pending() -> dict[str, str]:
    entries = {}
    for line in PENDING.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, reason = line.partition(":")
        assert reason.strip(), f"vectors_pending.txt: {key!r} needs a reason after ':'"
        entries[key.strip()] = reason.strip()
    return entries


def _claimed(tmp_path: Path) -> set[str]:
    out = tmp_path / "claimed.txt"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "vectors",
            f"--vector-groups-out={out}",
            str(TESTS),
        ],
        capture_output=True,
        text=True,
        cwd=TESTS.parent,
        timeout=300,
    )
    assert out.exists(), result.stdout[-2000:] + result.stderr[-2000:]
    return {line.strip() for line in out.read_text().splitlines() if line.strip()}


def test_every_vector_group_is_run_or_pending(tmp_path: Path) -> None:
    claimed = _claimed(tmp_path)
    pending = _pending()
    missing = []
    for file in FILES:
        for group, cases in groups(file).items():
            key = f"{file} {group}"
            if not cases:
                continue
            if key in claimed:
                assert key not in pending, f"{key} is run by a test: remove it from vectors_pending.txt"
            elif key not in pending:
                missing.append(key)
    assert not missing, f"vector groups neither run nor listed in vectors_pending.txt: {missing}"
