#!/usr/bin/env python3
"""Compare (or refresh) the repository's copy of the public vectors with the project's shared folder.

The tests read only ``tests/vectors`` (see ``testing/clusterpulse_testing/vectors.py``). The reference
files are maintained in a ``shared/vectors`` folder beside the repository, which a clone from the
public home does not have; this script tells when that folder, if present, holds other files than
the copy:

    python3 scripts/sync_vectors.py            # report; exit 1 when the copy is stale
    python3 scripts/sync_vectors.py --write    # copy the shared files into tests/vectors
    python3 scripts/sync_vectors.py --warn     # report on stderr, always exit 0 (scripts/test.sh)

``--from DIR`` compares with another folder. With no shared folder it says so and exits 0.
Standard library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COPY = REPO / "tests" / "vectors"
SHARED = REPO.parent / "shared" / "vectors"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def differences(shared: Path, copy: Path) -> list[str]:
    """One line per ``*.json`` file that is new, changed or gone in ``shared`` compared with ``copy``."""
    theirs = {p.name: p for p in sorted(shared.glob("*.json"))}
    ours = {p.name: p for p in sorted(copy.glob("*.json"))}
    lines = []
    for name, path in theirs.items():
        if name not in ours:
            lines.append(f"{name}: only in {shared}")
        elif _digest(path) != _digest(ours[name]):
            newer = " (newer)" if path.stat().st_mtime > ours[name].stat().st_mtime else ""
            lines.append(f"{name}: differs from {shared / name}{newer}")
    lines += [f"{name}: not in {shared}" for name in ours if name not in theirs]
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="shared", type=Path, default=SHARED, help="shared vectors folder")
    parser.add_argument("--to", dest="copy", type=Path, default=COPY, help=argparse.SUPPRESS)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="copy the shared files into the repository")
    mode.add_argument("--warn", action="store_true", help="report on stderr and exit 0")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        print(f"sync_vectors: no shared vectors at {args.shared}; using the repository's copy", file=sys.stderr)
        return 0
    stale = differences(args.shared, args.copy)
    if not stale:
        print(f"sync_vectors: {args.copy} matches {args.shared}", file=sys.stderr)
        return 0
    if args.write:
        args.copy.mkdir(parents=True, exist_ok=True)
        for path in args.shared.glob("*.json"):
            shutil.copyfile(path, args.copy / path.name)
        for line in stale:
            print(f"sync_vectors: updated {line}", file=sys.stderr)
        return 0
    for line in stale:
        print(f"sync_vectors: {line}", file=sys.stderr)
    print(
        "sync_vectors: refresh with `python3 scripts/sync_vectors.py --write` and commit tests/vectors", file=sys.stderr
    )
    return 0 if args.warn else 1


if __name__ == "__main__":
    sys.exit(main())
