#!/usr/bin/env bash
# The main job on the embedded demo fleet: set up only what the demo needs (redis-server, the core
# with the model, testing and demo distributions, the plugins the demo enables), then run `clusterpulse demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
exec .venv/bin/clusterpulse demo "$@"
