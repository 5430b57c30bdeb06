#!/usr/bin/env bash
# Seeded kill -9 chaos run of mirrored and node-local checkpoint saves on a real Ceph RADOS
# gateway (scripts/rgw.sh): bench/ckpt_chaos.py says what is killed and what is checked.
#   bash bench/ckpt_chaos.sh [BUILD_DIR=build/release] [TRIALS=20] [SEED=37]
# Prints one line per kill and a summary; exit 1 when anything committed or reported durable
# was lost or wrong.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build/release}"
TRIALS="${2:-20}"
SEED="${3:-37}"
[[ -d "$BUILD/python/titan" ]] || { echo "build the Python module first: scripts/build.sh release _titan" >&2; exit 1; }
WORK=$(mktemp -d /tmp/titan-chaos-XXXXXX)
trap 'bash "$ROOT/scripts/rgw.sh" stop "$WORK/rgw" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
export TITAN_RGW_MEMSTORE_BYTES=$(( 4 << 30 ))
eval "$(bash "$ROOT/scripts/rgw.sh" start "$WORK/rgw" 2>/dev/null)"
PYTHONPATH="$ROOT/test/checkpoint" /usr/bin/python3 -c \
  'import os, rgw; r = rgw.Rgw(); r.endpoint = os.environ["AWS_ENDPOINT_URL"]; r.make_bucket("chaos")'
PYTHONPATH="$BUILD/python" /usr/bin/python3 "$ROOT/bench/ckpt_chaos.py" driver \
  --trials "$TRIALS" --seed "$SEED" --titan "$BUILD/tools/titan/titan"
