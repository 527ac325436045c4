#!/usr/bin/env bash
# Prints, one per line, the pip arguments of the test environment: the core editable with the extras
# given as $1 (default "dev"; "testing" is accepted and means the clusterpulse-testing distribution,
# always included), the model, testing and demo distributions, and every plugins/*/ distribution
# editable with its testing extra. The one list scripts/setup.sh, scripts/install-editable.sh (tox)
# and scripts/test-lowest.sh install, so a new plugin directory is picked up by all three. The
# test-only plugins under tests/plugins/ are not in it: the suite installs them into
# tests/plugins/.site (tests/conftest.py), never into the user's virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=$(printf '%s' "${1-dev}" | tr ',' '\n' | { grep -vx 'testing' || true; } | paste -sd, -)
if [ -n "$extras" ]; then printf -- '-e\n.[%s]\n' "$extras"; else printf -- '-e\n.\n'; fi
for distribution in model testing demo; do
  printf -- '-e\n%s\n' "$distribution"
done
for plugin in plugins/*/; do
  printf -- '-e\n%s[testing]\n' "${plugin%/}"
done
