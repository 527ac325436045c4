#!/usr/bin/env bash
# The main job on the embedded demo fleet: set up (apt + venv), then run `clusterpulse demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/clusterpulse demo "$@"
