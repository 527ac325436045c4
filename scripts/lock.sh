#!/usr/bin/env bash
# Regenerates the lock files (every third-party distribution pinned, with the sha256 of each of its
# files) from the pyprojects:
#
#   requirements/test.lock     what scripts/setup.sh installs: the test environment of
#                              scripts/test-packages.sh (core[dev], model, testing, demo, every
#                              plugin[testing], the test-only plugins)
#   requirements/runtime.lock  what the Containerfile installs: the core, the model and every
#                              plugin, no extras
#
#   bash scripts/lock.sh       # after changing a dependency in any pyproject.toml (docs/development.md)
#
# Resolved for CPython 3.11 on Linux (the Containerfile's base and CI) by uv from the indexes pip is
# configured with. Our own distributions are not in the files: they are installed from the sources,
# without dependencies, after the lock (setup.sh, Containerfile). The declared lower bounds stay
# checked by scripts/test-lowest.sh, which resolves without the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
uv=.venv/bin/uv
[ -x "$uv" ] || { echo "lock: $uv not found: run bash scripts/setup.sh first (uv comes with the dev extra)" >&2; exit 1; }

# Our distributions: listed as inputs, never emitted.
mapfile -t ours < <(.venv/bin/python - <<'PY'
import pathlib, tomllib
for path in [pathlib.Path("pyproject.toml"), *sorted(pathlib.Path().glob("*/pyproject.toml")),
             *sorted(pathlib.Path().glob("plugins/*/pyproject.toml")),
             *sorted(pathlib.Path().glob("tests/plugins/*/pyproject.toml"))]:
    print(tomllib.loads(path.read_text())["project"]["name"])
PY
)
indexes=()
for url in $(.venv/bin/python -m pip config get global.extra-index-url 2>/dev/null || true); do
  indexes+=(--extra-index-url "$url")
done
compile() {  # compile OUTPUT INPUT...
  local output=$1 input
  shift
  input=$(mktemp)
  printf '%s\n' "$@" > "$input"
  "$uv" pip compile --quiet --generate-hashes --python-version 3.11 --python-platform linux \
    --index-strategy unsafe-best-match "${indexes[@]}" \
    "${ours[@]/#/--no-emit-package=}" --custom-compile-command "bash scripts/lock.sh" \
    --output-file "$output" "$input"
  rm -f "$input"
  if grep -qE '^(-e |clusterpulse)' "$output"; then
    echo "lock: $output names one of our own distributions" >&2
    exit 1
  fi
}

mapfile -t test_args < <(bash scripts/test-packages.sh testing,dev)
test_inputs=()
for ((i = 0; i < ${#test_args[@]}; i += 2)); do
  test_inputs+=("-e ./${test_args[i + 1]}")
done
compile requirements/test.lock "${test_inputs[@]}"

# What the Containerfile builds: the core, the model and every plugin (no testing/ nor demo/).
runtime_inputs=("-e ." "-e ./model")
for plugin in plugins/*/; do
  runtime_inputs+=("-e ./${plugin%/}")
done
compile requirements/runtime.lock "${runtime_inputs[@]}"
echo "lock: wrote requirements/test.lock and requirements/runtime.lock" >&2
