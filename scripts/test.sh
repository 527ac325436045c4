#!/usr/bin/env bash
# The test command: set up (apt + venv), then lint, type-check and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy clusterpulse_core $(ls -d plugins/*/clusterpulse_*/ | grep -v egg-info)
.venv/bin/python -m pytest "$@"
