#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs the end-to-end demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/build.sh release
exec bash examples/agent_demo.sh build/release "$@"
