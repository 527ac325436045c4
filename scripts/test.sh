#!/usr/bin/env bash
# The test command (what CI runs): set up (apt + venv), lint, type-check, build the docs strictly, run
# the whole suite, and at the same time run it on the lowest dependency versions the pyprojects allow
# (scripts/test-lowest.sh; its output follows the main run's). Arguments go to both pytest runs.
# CLUSTERPULSE_LOWEST=0 skips the second run (local iterations).
#
# The two runs go side by side because the suite mostly waits on its servers and subprocesses (about
# half a core busy per run): in sequence they took twice the wall-clock time for the same CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 scripts/sync_vectors.py --warn
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy clusterpulse_core model/clusterpulse_model testing/clusterpulse_testing demo/clusterpulse_demo $(ls -d plugins/*/clusterpulse_*/ | grep -v egg-info)
.venv/bin/mypy --strict clusterpulse_core model/clusterpulse_model   # the core and the model are held to --strict; the rest to the config above
# .importlinter: the core imports no plugin nor the model, plugins are independent (the test-only plugins
# are found in their folders: they are not installed into .venv)
PYTHONPATH=$(ls -d tests/plugins/*/ | paste -sd:) .venv/bin/lint-imports
site=$(mktemp -d)
.venv/bin/mkdocs build --strict --quiet --site-dir "$site"   # docs/: every warning (bad link, bad docstring ref) fails
if grep -rlE ':(py:)?(class|func|meth|data|mod|attr|exc|obj|const):<code>' "$site" --include='*.html'; then
  echo "docs: the pages above show a Sphinx role literally (scripts/mkdocs_roles.py renders them)" >&2
  exit 1
fi
rm -rf "$site"

lowest_pid=""
if [ "${CLUSTERPULSE_LOWEST:-1}" != 0 ]; then
  lowest_log=$(mktemp)
  bash scripts/test-lowest.sh "$@" >"$lowest_log" 2>&1 &
  lowest_pid=$!
  trap 'kill "$lowest_pid" 2>/dev/null || true' EXIT
fi
status=0
.venv/bin/python -m pytest "$@" || status=$?
if [ -n "$lowest_pid" ]; then
  lowest_status=0
  wait "$lowest_pid" || lowest_status=$?
  trap - EXIT
  echo "=== the suite on the lowest allowed dependency versions (scripts/test-lowest.sh): exit $lowest_status ==="
  cat "$lowest_log"
  rm -f "$lowest_log"
  [ "$status" = 0 ] && status=$lowest_status
fi
exit "$status"
