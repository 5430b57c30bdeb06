#!/usr/bin/env bash
# ETTR (productive / wall, from titan run's goodput ledger) of the demo's training job
# (examples/train_tiny_lm.py, 2 DDP workers, checkpoint every 100 steps) with no failure and
# with a crash every 60 s of its run.
#   bash bench/run_ettr.sh [BUILD_DIR] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
STEPS=${2:-3000}
TITAN=${TITAN:-$BUILD/tools/titan/titan}
export PYTHONPATH=$BUILD/python
W=$(mktemp -d /tmp/titan-bench-ettr-XXXX)
trap 'rm -rf "$W"' EXIT
for mode in none every60; do
  inj=()
  [ $mode = every60 ] && inj=(--inject 'crash@every=60' --seed 11)
  mkdir -p "$W/$mode"
  "$TITAN" run --quiet --nproc-per-node 2 --max-restarts 100 --run-dir "$W/$mode" \
    --checkpoint-dir "$W/$mode/ckpt" "${inj[@]}" -- /usr/bin/python3 examples/train_tiny_lm.py \
    --steps "$STEPS" --ckpt-every 100 --step-sleep 0.02 --out "$W/$mode/result.json" >/dev/null 2>&1
  /usr/bin/python3 - "$W/$mode/ledger.json" "$mode" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))
s = l["seconds"]
print(f"{sys.argv[2]:<8} wall {l['wall_seconds']:6.1f} s  ETTR {l['ettr']:.3f}  restarts {l['restarts']}  "
      + "  ".join(f"{k} {v:.1f}" for k, v in s.items()))
PY
done
