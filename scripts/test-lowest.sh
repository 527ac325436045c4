#!/usr/bin/env bash
# The suite again on the lowest versions the pyprojects allow for every direct dependency
# (`uv pip install --resolution lowest-direct` into .venv-lowest), so a floor that is too low fails
# here rather than on a user's machine. Run by scripts/test.sh after the main suite; arguments go to
# pytest. Every plugins/*/ distribution is included (with its testing extra); the test-only plugins
# come from tests/plugins/.site (tests/conftest.py installs them there).
# Needs .venv (scripts/setup.sh) for uv.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-lowest
uv=.venv/bin/uv
[ -x "$uv" ] || { echo "test-lowest: $uv missing: run bash scripts/setup.sh" >&2; exit 1; }
mapfile -t packages < <(bash scripts/test-packages.sh testing)
stamp=$venv/.clusterpulse-lowest
want=$(cat pyproject.toml {model,testing,demo}/pyproject.toml plugins/*/pyproject.toml tests/plugins/*/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # A fresh venv each time: uv keeps installed versions that still satisfy a raised floor.
  rm -rf "$venv"
  "$uv" venv -q --seed --python .venv/bin/python "$venv"   # --seed: pip/setuptools, for tests that pip install
  echo "test-lowest: installing the lowest allowed direct dependencies into $venv" >&2
  "$uv" pip install -q --python "$venv/bin/python" --resolution lowest-direct "${packages[@]}"
  echo "$want" > "$stamp"
fi
# The packaging, deploy, container and reference-page tests check files with the dev tools (build,
# kubectl, kubernetes-validate, mkdocs), not library versions: they run in .venv only (exit status 5, "no tests
# collected", means the arguments selected only those).
status=0
"$venv/bin/python" -m pytest --ignore=tests/test_packaging.py --ignore=tests/test_deploy.py \
  --ignore=tests/test_container.py --ignore=tests/test_reference_pages.py "$@" || status=$?
[ "$status" = 5 ] && status=0
exit "$status"
