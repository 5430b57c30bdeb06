#!/usr/bin/env bash
# Full recovery from one worker crash: `titan run` vs torchrun restarting the same job
# (/usr/bin/python3 -m torch.distributed.run --max_restarts=1), same script, same machine, same
# run. The crash is the same for both: once the step-20 checkpoint exists, rank 1 gets SIGKILL
# from outside (a process found through /proc by its RANK=1 environment). Both resume from titan checkpoints. Recovery cost = wall(crash) - wall(no crash).
#   bash bench/run_vs_torchrun.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
TITAN=${TITAN:-$BUILD/tools/titan/titan}
export PYTHONPATH=$BUILD/python
PY=/usr/bin/python3
W=$(mktemp -d /tmp/titan-bench-vs-XXXX)
trap 'rm -rf "$W"' EXIT
STEPS=80
ARGS="examples/train_tiny_lm.py --steps $STEPS --ckpt-every 20 --step-sleep 0.02"

# Kills rank 1 of the job whose launcher is $1 once checkpoint step 20 is committed in $2.
kill_rank1_after_ckpt() {
  local launcher=$1 ckpt=$2
  until $PY -c "import sys,titan.checkpoint as c; sys.exit(0 if (c.latest_step('$ckpt') or 0) >= 20 else 1)" 2>/dev/null; do
    sleep 0.05
  done
  # rank 1 = the launcher's descendant python process with RANK=1 in its environment
  for pid in $(ps -o pid= --ppid "$launcher") $(for c in $(ps -o pid= --ppid "$launcher"); do ps -o pid= --ppid "$c"; done); do
    if tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep -qx 'RANK=1'; then
      kill -9 "$pid"; echo "killed rank 1 (pid $pid) of launcher $launcher" >&2; return
    fi
  done
  echo "rank 1 of launcher $launcher not found" >&2
}

run() {  # name launcher crash(0/1)
  local name=$1 launcher=$2 crash=$3 d="$W/$1"
  mkdir -p "$d/ckpt"
  local t0=$(date +%s.%N)
  if [ "$launcher" = titan ]; then
    TITAN_CHECKPOINT_DIR=$d/ckpt "$TITAN" run --quiet --nproc-per-node 2 --run-dir "$d" \
      --checkpoint-dir "$d/ckpt" -- $PY $ARGS --out "$d/result.json" >"$d/log" 2>&1 &
  else
    # torchrun itself, with the one fix Debian's torch 1.13 needs on Python 3.11
    TITAN_CHECKPOINT_DIR=$d/ckpt $PY bench/run_torchrun_py311.py --standalone --nproc_per_node 2 \
      --max_restarts=1 $ARGS --out "$d/result.json" >"$d/log" 2>&1 &
  fi
  local pid=$! killer=
  if [ "$crash" = 1 ]; then kill_rank1_after_ckpt $pid "$d/ckpt" & killer=$!; fi
  wait $pid || echo "$name: launcher exit $?"
  [ -n "$killer" ] && { kill $killer 2>/dev/null || true; wait $killer 2>/dev/null || true; }
  local t1=$(date +%s.%N)
  echo "$name $(echo "$t1 - $t0" | bc)" >> "$W/times"
}

run titan_clean titan 0
run titan_crash titan 1
run torchrun_clean torchrun 0
run torchrun_crash torchrun 1
$PY - "$W" <<'PY'
import json, sys
w = sys.argv[1]
t = dict((l.split()[0], float(l.split()[1])) for l in open(f"{w}/times"))
res = {k: json.load(open(f"{w}/{k}/result.json")) for k in t if __import__("os").path.exists(f"{w}/{k}/result.json")}
for k in sorted(t):
    r = res.get(k, {})
    print(f"{k:<16} wall {t[k]:6.1f} s  loss {r.get('final_loss', float('nan')):.6f}  restarts {r.get('restart_count', '?')}")
ti = t["titan_crash"] - t["titan_clean"]
tr = t["torchrun_crash"] - t["torchrun_clean"]
print(f"recovery cost (wall with crash - wall without): titan {ti:.1f} s, torchrun {tr:.1f} s, ratio torchrun/titan {tr/ti if ti > 0 else float('nan'):.2f}")
if "titan_crash" in res and "titan_clean" in res:
    print("titan: parameters after recovery identical to the clean run:",
          res["titan_crash"]["param_sha256"] == res["titan_clean"]["param_sha256"])
PY
