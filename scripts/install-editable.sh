#!/usr/bin/env bash
# Installs the test environment into the Python given as $1, editable: the core with its dev extra,
# the model, testing and demo distributions, every plugins/*/ distribution with its testing extra
# (the list scripts/test-packages.sh prints; the suite installs the test-only plugins itself, into
# tests/plugins/.site). Used by tox.ini (scripts/setup.sh does the same for .venv, with a stamp).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:?usage: install-editable.sh PYTHON}
mapfile -t packages < <(bash scripts/test-packages.sh testing,dev)
exec "$python" -m pip install --disable-pip-version-check -q "${packages[@]}"
