#!/usr/bin/env bash
# titan trace vs the floor for any Python tool (json.load of the same gzipped files), on an
# 8-rank set built from a real rank (bench/trace_make_set.py), in the same run.
# usage: bench/trace_bench.sh [BUILD_DIR]   (needs titan built in BUILD_DIR)
set -euo pipefail
source "$(dirname "$0")/trace_set.sh"
TITAN="$BUILD/tools/titan/titan"
[[ -x "$TITAN" ]] || { echo "build titan first: cmake --build $BUILD --target titan" >&2; exit 1; }
CLI=("$TITAN" trace)
FILES=("$SET"/rank*.json.gz)
RAW=$(for f in "${FILES[@]}"; do gzip -dc "$f" | wc -c; done | awk '{s+=$1} END {print s}')
GZ=$(du -cb "${FILES[@]}" | tail -1 | cut -f1)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "set: ${#FILES[@]} ranks, $((RAW / 1000000)) MB raw JSON, $((GZ / 1000000)) MB gzipped"

measure() {  # label, command...: prints "label wall_s maxrss_kb cpu_s"
  local label="$1"; shift
  local log; log=$(mktemp)
  /usr/bin/time -v "$@" > /dev/null 2> "$log" || { cat "$log" >&2; rm -f "$log"; return 1; }
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(grep "Maximum resident" "$log" | awk '{print $NF}')
  cpu=$(awk -F: '/User time|System time/ {s+=$2} END {print s}' "$log")
  rm -f "$log"
  echo "$label $wall $rss $cpu"
}

read -r _ T2 R2 C2 < <(measure titan2 "${CLI[@]}" analyze "$SET" --threads 2)
read -r _ T1 R1 C1 < <(measure titan1 "${CLI[@]}" analyze "$SET" --threads 1)
read -r _ TH RH CH < <(measure titanh "${CLI[@]}" analyze "$SET" --threads 2 --hta-compat)
read -r _ TP RP CP < <(measure python /usr/bin/python3 -c 'import json,gzip,sys; [json.load(gzip.open(f)) for f in sys.argv[1:]]' "${FILES[@]}")

awk -v raw="$RAW" -v t2="$T2" -v r2="$R2" -v c2="$C2" -v t1="$T1" -v r1="$R1" -v c1="$C1" \
    -v th="$TH" -v rh="$RH" -v ch="$CH" -v tp="$TP" -v rp="$RP" -v cp="$CP" 'BEGIN {
  mb = raw / 1e6
  printf "%-46s %7s %7s %9s %14s\n", "command (same files, same run)", "wall s", "CPU s", "MB/CPU-s", "peak RSS"
  printf "%-46s %7.2f %7.2f %9.0f %6.0f MB %.2fx\n", "titan trace analyze --threads 2", t2, c2, mb / c2, r2 / 1024, r2 * 1024 / raw
  printf "%-46s %7.2f %7.2f %9.0f %6.0f MB %.2fx\n", "titan trace analyze --threads 1", t1, c1, mb / c1, r1 / 1024, r1 * 1024 / raw
  printf "%-46s %7.2f %7.2f %9.0f %6.0f MB %.2fx\n", "titan trace analyze --threads 2 --hta-compat", th, ch, mb / ch, rh / 1024, rh * 1024 / raw
  printf "%-46s %7.2f %7.2f %9.0f %6.0f MB %.2fx\n", "python3: json.load(gzip.open(f)) only", tp, cp, mb / cp, rp / 1024, rp * 1024 / raw
  printf "ratio (wall): titan full analysis on 2 threads is %.1fx faster than json.load alone in Python\n", tp / t2
  printf "ratio (CPU):  %.1fx less CPU time\n", cp / c2
}'
echo "HTA itself is not installable here (not on PyPI in this environment); its published speed on this kind of machine is ~8 MB/s per core."
echo "late rank check:"; "${CLI[@]}" analyze "$SET" --threads 2 | sed -n '/^stragglers:/,/^$/p'
