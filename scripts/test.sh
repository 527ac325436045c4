#!/usr/bin/env bash
# The test command: set up (apt + venv), then lint, type-check, build the docs strictly and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy clusterpulse_core $(ls -d plugins/*/clusterpulse_*/ | grep -v egg-info)
site=$(mktemp -d)
.venv/bin/mkdocs build --strict --quiet --site-dir "$site"   # docs/: every warning (bad link, bad docstring ref) fails
rm -rf "$site"
.venv/bin/python -m pytest "$@"
