"""The test-only plugins (``tests/plugins/*``) for the suite, kept out of the user's virtualenv.

They are installed (not editable, no dependencies) into ``tests/plugins/.site``, which this file
puts on ``sys.path`` and on ``PYTHONPATH`` (for the ``clusterpulse`` subprocesses the tests start),
so ``clusterpulse plugins`` in ``.venv`` never lists ``example-broken`` and its siblings. The
install is redone when a file under ``tests/plugins/*/`` changed (a digest of their contents is
kept beside them), under a lock, so two suites started together (scripts/test.sh runs the
lowest-versions suite beside the main one) install once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

PLUGINS = Path(__file__).parent / "plugins"
SITE = PLUGINS / ".site"
STAMP = SITE / ".digest"


def _digest() -> str:
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted(PLUGINS.glob("*/**/*")):
        relative = path.relative_to(PLUGINS)
        if (
            path.is_file()
            and relative.parts[0] != SITE.name
            and not {"__pycache__", "build"} & set(relative.parts)
            and not any(part.endswith(".egg-info") for part in relative.parts)
        ):
            digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _install() -> None:
    PLUGINS.joinpath(".site.lock").touch()
    with open(PLUGINS / ".site.lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        want = _digest()
        if STAMP.is_file() and STAMP.read_text() == want:
            return
        projects = sorted(str(p.parent) for p in PLUGINS.glob("*/pyproject.toml"))
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--upgrade",
                "--target",
                str(SITE),
                *projects,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0:
            raise RuntimeError(f"installing the test-only plugins into {SITE} failed:\n{result.stdout}{result.stderr}")
        STAMP.write_text(want)


_install()
sys.path.insert(0, str(SITE))
os.environ["PYTHONPATH"] = os.pathsep.join([str(SITE), *filter(None, [os.environ.get("PYTHONPATH")])])
