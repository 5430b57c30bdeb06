#!/usr/bin/env bash
# The split trace analysis (titan trace summarize per node, then titan trace analyze of the
# summaries) against one titan trace analyze of all files, on the same 8-rank set as
# bench/trace_bench.sh (built once from the real V100 rank), split over 3 "nodes" (ranks 0-2,
# 3-5, 6-7; directories of symlinks): summary size vs raw size, and time. The nodes run one after
# the other here; on a cluster they run at once, so the split's wall time is the slowest node
# plus the merge. Also checks that both give the same --json (elapsed time masked).
# usage: bench/trace_split_bench.sh [BUILD_DIR]   (needs titan built in BUILD_DIR)
set -euo pipefail
source "$(dirname "$0")/trace_set.sh"
TITAN="${TITAN:-$BUILD/tools/titan/titan}"
[[ -x "$TITAN" ]] || { echo "build titan first: cmake --build $BUILD --target titan" >&2; exit 1; }
WORK=$(mktemp -d /tmp/titan_trace_split_bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/node0" "$WORK/node1" "$WORK/node2" "$WORK/summaries"
for r in 0 1 2; do ln -s "$SET/rank$r.json.gz" "$WORK/node0/"; done
for r in 3 4 5; do ln -s "$SET/rank$r.json.gz" "$WORK/node1/"; done
for r in 6 7; do ln -s "$SET/rank$r.json.gz" "$WORK/node2/"; done

RAW=$(for f in "$SET"/rank[0-7].json.gz; do gzip -dc "$f" | wc -c; done | awk '{s+=$1} END {print s}')
GZ=$(du -cbL "$SET"/rank[0-7].json.gz | tail -1 | cut -f1)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "set: 8 ranks on 3 nodes (3+3+2), $((RAW / 1000000)) MB raw JSON, $((GZ / 1000000)) MB gzipped"

seconds() {  # command...: prints its wall time in seconds; stdout to $WORK/last.out
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$WORK/last.out"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

SINGLE=$(seconds "$TITAN" trace analyze "$WORK/node0" "$WORK/node1" "$WORK/node2" --json)
cp "$WORK/last.out" "$WORK/single.json"
N0=$(seconds "$TITAN" trace summarize "$WORK/node0" -o "$WORK/summaries/node0.json")
N1=$(seconds "$TITAN" trace summarize "$WORK/node1" -o "$WORK/summaries/node1.json")
N2=$(seconds "$TITAN" trace summarize "$WORK/node2" -o "$WORK/summaries/node2.json")
MERGE=$(seconds "$TITAN" trace analyze "$WORK/summaries/node0.json" "$WORK/summaries/node1.json" \
  "$WORK/summaries/node2.json" --json)
cp "$WORK/last.out" "$WORK/split.json"
SUMMARY=$(du -cb "$WORK"/summaries/*.json | tail -1 | cut -f1)
CALLS=$(/usr/bin/python3 -c 'import json,sys; print(sum(len(r["collectives"]) for f in sys.argv[1:] for r in json.load(open(f))["ranks"]))' "$WORK"/summaries/*.json)
STEPS=$(/usr/bin/python3 -c 'import json,sys; print(sum(len(r["steps"]) for f in sys.argv[1:] for r in json.load(open(f))["ranks"]))' "$WORK"/summaries/*.json)

awk -v raw="$RAW" -v gz="$GZ" -v sum="$SUMMARY" -v calls="$CALLS" -v steps="$STEPS" \
    -v single="$SINGLE" -v n0="$N0" -v n1="$N1" -v n2="$N2" -v merge="$MERGE" 'BEGIN {
  slowest = n0; if (n1 > slowest) slowest = n1; if (n2 > slowest) slowest = n2
  printf "%-52s %12s\n", "size", "bytes"
  printf "%-52s %12d\n", "raw trace JSON (8 ranks)", raw
  printf "%-52s %12d\n", "gzipped traces", gz
  printf "%-52s %12d  (%.0f per rank; %d steps, %d collective calls)\n", "summaries (3 files)", sum, sum / 8, steps, calls
  printf "ratio: summaries are %.5f of the raw JSON (1/%.0f), 1/%.0f of the gzipped traces\n", sum / raw, raw / sum, gz / sum
  printf "%-52s %8s\n", "time (same files, same run)", "wall s"
  printf "%-52s %8.2f\n", "titan trace analyze (all 8 ranks, one process)", single
  printf "%-52s %8.2f %8.2f %8.2f\n", "titan trace summarize node0 / node1 / node2", n0, n1, n2
  printf "%-52s %8.2f\n", "titan trace analyze of the 3 summaries (merge)", merge
  printf "%-52s %8.2f\n", "split, nodes at once: slowest node + merge", slowest + merge
  printf "%-52s %8.2f\n", "split, nodes one after the other: sum + merge", n0 + n1 + n2 + merge
  printf "ratio (wall): split with nodes at once is %.2fx the single analysis\n", (slowest + merge) / single
}'
mask() { sed -E 's/^  "seconds": [0-9.eE+-]+(,?)$/  "seconds": X\1/' "$1"; }
if cmp -s <(mask "$WORK/single.json") <(mask "$WORK/split.json"); then
  echo "same --json from the split and the single run (elapsed time masked): yes"
else
  echo "same --json from the split and the single run: NO" >&2
  exit 1
fi
