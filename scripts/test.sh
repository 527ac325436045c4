#!/usr/bin/env bash
# The test command (what CI runs): set up (apt + venv), lint, type-check, build the docs strictly, run
# the whole suite, then run it again on the lowest dependency versions the pyprojects allow
# (scripts/test-lowest.sh). Arguments go to both pytest runs. CLUSTERPULSE_LOWEST=0 skips the second
# run (local iterations).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 scripts/sync_vectors.py --warn
.venv/bin/ruff check .
.venv/bin/mypy clusterpulse_core $(ls -d plugins/*/clusterpulse_*/ | grep -v egg-info)
site=$(mktemp -d)
.venv/bin/mkdocs build --strict --quiet --site-dir "$site"   # docs/: every warning (bad link, bad docstring ref) fails
rm -rf "$site"
.venv/bin/python -m pytest "$@"
if [ "${CLUSTERPULSE_LOWEST:-1}" != 0 ]; then
  bash scripts/test-lowest.sh "$@"
fi
