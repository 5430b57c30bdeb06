#!/usr/bin/env bash
# One large trace on all cores: `titan trace analyze` of a single file with its import on two
# threads (the default for one file; events parsed beside the scan) and on one (--threads 1),
# against Python's json.load of the same file (the floor for any Python tool, HTA included),
# as users run it and with the garbage collector off. Same run, rounds interleaved, medians.
#
# usage: bench/trace_one_file.sh [BUILD_DIR] [ROUNDS]   (needs titan built in BUILD_DIR)
# Files: the real 54 MB V100 DDP rank from ../shared (gzipped and plain), and one 375 MB trace
# made of its events 8 times over (timestamps shifted), the size of one rank of a large job.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/release}
ROUNDS=${2:-5}
TITAN="$BUILD/tools/titan/titan"
[[ -x "$TITAN" ]] || { echo "build titan first: cmake --build $BUILD --target titan" >&2; exit 1; }
RANK="$ROOT/../shared/data/traces/hta_df_index_resolver_v100_ddp/df_index_resolver.json.gz"
[[ -f "$RANK" ]] || { echo "missing $RANK (../shared beside the clone)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/titan-trace-one.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

cp "$RANK" "$WORK/rank.json.gz"
gzip -dc "$RANK" > "$WORK/rank.json"
/usr/bin/python3 - "$WORK/rank.json" "$WORK/big.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
events = doc["traceEvents"]
out = []
for k in range(8):
    for e in events:
        e = dict(e)
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] += k * 10_000_000
        out.append(e)
doc["traceEvents"] = out
json.dump(doc, open(sys.argv[2], "w"))
EOF
gzip -1 -k "$WORK/big.json"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "titan: $("$TITAN" --version 2>/dev/null | head -1); rounds: $ROUNDS (interleaved), medians"

wall() {  # seconds, to the microsecond (/usr/bin/time rounds to 10 ms)
  local t0 t1
  t0=$(date +%s%N)
  "$@" > /dev/null 2>&1
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", (b - a) / 1e9 }'
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
PY_LOAD='import json, gzip, sys; f = sys.argv[1]; json.load(gzip.open(f) if f.endswith(".gz") else open(f))'
PY_NOGC='import gc; gc.disable(); '"$PY_LOAD"

printf "%-14s %9s %11s %11s %13s %13s %9s %9s\n" file MB "titan 2thr" "titan 1thr" "json.load" "json.load-gc" ratio ratio-gc
for name in rank.json rank.json.gz big.json big.json.gz; do
  f="$WORK/$name"
  mb=$(gzip -dcf "$f" | wc -c | awk '{printf "%.0f", $1 / 1e6}')
  : > "$WORK/t2"; : > "$WORK/t1"; : > "$WORK/py"; : > "$WORK/pn"
  for ((r = 0; r < ROUNDS; r++)); do
    wall "$TITAN" trace analyze "$f" >> "$WORK/t2"
    wall "$TITAN" trace analyze --threads 1 "$f" >> "$WORK/t1"
    wall /usr/bin/python3 -c "$PY_LOAD" "$f" >> "$WORK/py"
    wall /usr/bin/python3 -c "$PY_NOGC" "$f" >> "$WORK/pn"
  done
  t2=$(median < "$WORK/t2"); t1=$(median < "$WORK/t1"); py=$(median < "$WORK/py"); pn=$(median < "$WORK/pn")
  awk -v n="$name" -v mb="$mb" -v t2="$t2" -v t1="$t1" -v py="$py" -v pn="$pn" 'BEGIN {
    printf "%-14s %9s %10.3fs %10.3fs %12.2fs %12.2fs %8.1fx %8.1fx\n", n, mb, t2, t1, py, pn, py / t2, pn / t2 }'
done
echo "ratio: json.load / titan (2 threads); ratio-gc: json.load with gc.disable() / titan (2 threads)"
