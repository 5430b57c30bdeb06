#!/usr/bin/env bash
# Checkpoint throughput side by side with dd and torch.save/torch.load (one rank).
#   bash bench/ckpt_bench.sh [BUILD_DIR=build/release] [DIR=/var/tmp/titan_ckpt_bench] [MIB=1024]
# Prints a table; numbers go to bench/RESULTS.md "## Checkpoint".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
dir=${2:-/var/tmp/titan_ckpt_bench}
mib=${3:-1024}
[ -f "$build/python/titan/checkpoint.py" ] || { echo "build the _titan target in $build first"; exit 1; }
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
echo "# $(date -u +%FT%TZ)  $(nproc) cores  $(uname -r)  $(df -hT "$dir" | awk 'NR==2{print $2" on "$1}')"
PYTHONPATH="$build/python" OMP_NUM_THREADS=2 /usr/bin/python3 bench/ckpt_bench.py --dir "$dir" --mib "$mib" "${@:4}"
