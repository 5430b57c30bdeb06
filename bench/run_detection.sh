#!/usr/bin/env bash
# Detection latency of `titan run` (crash, hang, lost node) over repeated injections, and
# titan's own restart overhead (failure detected -> workers exec'd).
#   bash bench/run_detection.sh [BUILD_DIR]     (default build/release)
# Light Python workers (bench/run_light_worker.py, 50 ms steps, no PyTorch) so that many
# injections fit in a short run. Prints median and max per kind.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
TITAN=${TITAN:-$BUILD/tools/titan/titan}
export PYTHONPATH=$BUILD/python
W=$(mktemp -d /tmp/titan-bench-detect-XXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
PY=/usr/bin/python3

# Crash: 8 SIGKILLs, one every 2 s. Hang: 5 SIGSTOPs, one every 6 s, bound = floor 1 s.
mkdir -p "$W/crash/ckpt" "$W/hang/ckpt"
"$TITAN" run --quiet --nproc-per-node 2 --run-dir "$W/crash" --checkpoint-dir "$W/crash/ckpt" \
  --max-restarts 100 --inject 'crash@every=2,times=8' --seed 3 \
  -- $PY bench/run_light_worker.py --seconds 22 >/dev/null 2>&1 || true
"$TITAN" run --quiet --nproc-per-node 2 --run-dir "$W/hang" --checkpoint-dir "$W/hang/ckpt" \
  --max-restarts 100 --hang-floor 1 --stack-wait 0.5 --inject 'hang@every=6,times=5' --seed 3 \
  -- $PY bench/run_light_worker.py --seconds 34 >/dev/null 2>&1 || true

# Lost node: 3 rounds of 2 nodes on a real etcd; node 1 disappears (lease TTL 2 s).
PORT=$($PY -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
PEER=$($PY -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
/usr/bin/etcd --name b --data-dir "$W/etcd" --listen-client-urls http://127.0.0.1:$PORT \
  --advertise-client-urls http://127.0.0.1:$PORT --listen-peer-urls http://127.0.0.1:$PEER \
  --initial-advertise-peer-urls http://127.0.0.1:$PEER --initial-cluster b=http://127.0.0.1:$PEER \
  >/dev/null 2>&1 &
sleep 1.5
for i in 1 2 3; do
  for n in a b; do
    mkdir -p "$W/lost$i/$n" "$W/lost$i/ckpt"
    "$TITAN" run --quiet --etcd http://127.0.0.1:$PORT --job-id lost$i --nnodes 1:2 \
      --nproc-per-node 1 --node-id $n --node-addr 127.0.0.1 --lease-ttl 2 --last-call 1 \
      --run-dir "$W/lost$i/$n" --checkpoint-dir "$W/lost$i/ckpt" --inject 'node-loss@node=1,step=20' \
      -- $PY bench/run_light_worker.py --seconds 5 >/dev/null 2>&1 &
  done
  wait $(jobs -p | tail -2) || true
done

$PY - "$W" <<'PY'
import json, statistics, sys, glob, os
w = sys.argv[1]
def ev(path):
    return [json.loads(l) for l in open(path) if l.strip()]
def show(name, xs, unit):
    if not xs:
        print(f"{name:<32} no samples"); return
    print(f"{name:<32} n={len(xs):<3} median {statistics.median(xs):8.1f} {unit}   max {max(xs):8.1f} {unit}")
crash = [e["detection_ms"] for e in ev(f"{w}/crash/events.jsonl") if e["type"] == "crash" and "detection_ms" in e]
hang_over = [1000 * (e["detection_s"] - e["threshold_s"]) for e in ev(f"{w}/hang/events.jsonl") if e["type"] == "hang" and "detection_s" in e]
hang_total = [e["detection_s"] for e in ev(f"{w}/hang/events.jsonl") if e["type"] == "hang" and "detection_s" in e]
restart = [e["detect_to_exec_ms"] for d in ("crash", "hang") for e in ev(f"{w}/{d}/events.jsonl") if e["type"] == "restart"]
own = [e["detect_to_exec_ms"] - e["stop_ms"] - e["backoff_ms"] for d in ("crash", "hang") for e in ev(f"{w}/{d}/events.jsonl") if e["type"] == "restart"]
lost = []
for i in (1, 2, 3):
    b = [e for e in ev(f"{w}/lost{i}/b/events.jsonl") if e["type"] == "inject"]
    a = [e for e in ev(f"{w}/lost{i}/a/events.jsonl") if e["type"] == "lost"]
    if a and b:
        lost.append((a[0]["time_ns"] - b[0]["time_ns"]) / 1e9)
show("crash detection (SIGKILL->event)", crash, "ms")
show("hang detection (SIGSTOP->event)", hang_total, "s ")
show("  of which beyond the 1 s bound", hang_over, "ms")
show("lost node (kill->lease expiry)", lost, "s ")
show("restart: detected->exec'd", restart, "ms")
show("  titan's own (minus stop/backoff)", own, "ms")
PY
