"""The reference vectors come from the repository (tests/vectors); scripts/sync_vectors.py spots a stale copy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clusterpulse_testing import vectors

REPO = Path(__file__).parent.parent
SCRIPT = REPO / "scripts" / "sync_vectors.py"


def test_the_vectors_are_read_from_the_repository_not_from_a_shared_folder_nearby(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = tmp_path / "shared" / "vectors"
    decoy.mkdir(parents=True)
    (decoy / "utils_public.json").write_text(json.dumps({"groups": {"decoy": []}}))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for env in ("CLUSTERPULSE_SHARED", "CLUSTERPULSE_UTILS_VECTORS"):
        monkeypatch.delenv(env, raising=False)
    assert vectors.shared_vectors_dir() == (REPO / "tests" / "vectors").resolve()
    assert vectors.vector_file("utils") == (REPO / "tests" / "vectors" / "utils_public.json").resolve()


def test_the_environment_overrides_still_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERPULSE_SHARED", str(tmp_path))
    monkeypatch.delenv("CLUSTERPULSE_REDIS_VECTORS", raising=False)
    assert vectors.vector_file("redis") == tmp_path / "vectors" / "redis_examples.json"
    monkeypatch.setenv("CLUSTERPULSE_REDIS_VECTORS", str(tmp_path / "mine.json"))
    assert vectors.vector_file("redis") == tmp_path / "mine.json"


def test_every_vector_file_is_in_the_repository() -> None:
    for _env, name in vectors.FILES.values():
        assert json.loads((REPO / "tests" / "vectors" / name).read_text()), name


def _sync(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_sync_script_reports_a_stale_copy_and_refreshes_it(tmp_path: Path) -> None:
    shared, copy = tmp_path / "shared", tmp_path / "copy"
    shared.mkdir()
    copy.mkdir()
    (shared / "a.json").write_text('{"v": 2}')
    (copy / "a.json").write_text('{"v": 1}')
    (shared / "b.json").write_text("{}")

    stale = _sync("--from", str(shared), "--to", str(copy))
    assert stale.returncode == 1
    assert "a.json: differs" in stale.stderr and "b.json: only in" in stale.stderr

    warned = _sync("--from", str(shared), "--to", str(copy), "--warn")
    assert warned.returncode == 0 and "a.json: differs" in warned.stderr

    assert _sync("--from", str(shared), "--to", str(copy), "--write").returncode == 0
    assert (copy / "a.json").read_text() == '{"v": 2}' and (copy / "b.json").exists()
    same = _sync("--from", str(shared), "--to", str(copy))
    assert same.returncode == 0 and "matches" in same.stderr


def test_sync_script_is_quiet_success_without_a_shared_folder(tmp_path: Path) -> None:
    result = _sync("--from", str(tmp_path / "absent"))
    assert result.returncode == 0
    assert "no shared vectors" in result.stderr
