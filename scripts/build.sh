#!/usr/bin/env bash
# Configures and builds one preset (release | asan | tsan): scripts/build.sh [preset] [targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
uplot_dir=$(bash scripts/uplot.sh)  # titan report inlines uPlot (from npm, cached per machine)
if [ ! -f "build/$preset/build.ninja" ]; then
  cmake --preset "$preset" -DTITAN_UPLOT_DIR="$uplot_dir" >/dev/null
fi
jobs=$(nproc)
if [ $# -gt 0 ]; then
  cmake --build "build/$preset" -j "$jobs" --target "$@"
else
  cmake --build "build/$preset" -j "$jobs"
fi
