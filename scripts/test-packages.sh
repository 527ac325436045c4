#!/usr/bin/env bash
# Prints, one per line, the pip arguments of the test environment: the core editable with the extras
# given as $1 (default "testing,dev"), every plugins/*/ distribution editable with its testing extra,
# and the test-only plugins under tests/plugins/. The one list scripts/setup.sh,
# scripts/install-editable.sh (tox) and scripts/test-lowest.sh install, so a new plugin directory
# is picked up by all three.
set -euo pipefail
cd "$(dirname "$0")/.."
printf -- '-e\n.[%s]\n' "${1:-testing,dev}"
for plugin in plugins/*/; do
  printf -- '-e\n%s[testing]\n' "${plugin%/}"
done
for plugin in tests/plugins/*/; do
  printf -- '-e\n%s\n' "${plugin%/}"
done
