#!/usr/bin/env bash
# Prepares a fresh Debian/Ubuntu machine for ClusterPulse: the server binaries the tests and the
# demo run for real (apt), and a virtualenv in .venv with the core, every plugin and the dev tools.
# Idempotent: re-running it only installs what is missing or changed.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v victoria-metrics >/dev/null || missing+=(victoria-metrics)
command -v docker-registry >/dev/null || missing+=(docker-registry)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]} (apt)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv

# Reinstall only when a pyproject changed (editable installs pick up code changes by themselves).
stamp=.venv/.clusterpulse-installed
want=$(cat pyproject.toml plugins/*/pyproject.toml tests/plugins/*/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' >&2 || true
  editable=(-e ".[testing,dev]")
  for plugin in plugins/*/; do
    editable+=(-e "${plugin%/}[testing]")
  done
  for plugin in tests/plugins/*/; do
    editable+=(-e "$plugin")
  done
  .venv/bin/python -m pip install -q "${editable[@]}" 2>&1 | grep -vE '^WARNING: Location|editable|^\s*!!|^\s*\*+|^\s*$|Please be careful|name as your package|with strategy' >&2 || true
  echo "$want" > "$stamp"
fi
