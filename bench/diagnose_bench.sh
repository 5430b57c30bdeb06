#!/usr/bin/env bash
# titan diagnose beside grep and ripgrep over the same warm files:
#   1,024 ranks' logs of 1 MB (one root fault among peer timeouts): a full diagnosis
#   (titan diagnose) against finding the lines of diagnose's own patterns (LC_ALL=C grep -E -f,
#   and rg -f, Debian's ripgrep); and the Flight Recorder analysis of 4,096 ranks' dumps.
# Prints the median of REPEATS runs of each and the ratios.
#
#   bash bench/diagnose_bench.sh [TITAN_BIN] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
titan=${1:-build/release/tools/titan/titan}
repeats=${2:-5}
work=$(mktemp -d /tmp/titan-diagnose-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
command -v rg >/dev/null || { echo "ripgrep (Debian package ripgrep) is needed"; exit 1; }

/usr/bin/python3 bench/diagnose_make_logs.py "$work"
"$titan" diagnose --patterns > "$work/patterns.txt"
cat "$work"/logs/* "$work"/fr/* > /dev/null  # warm the page cache

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() {  # median wall seconds of "$@" over $repeats runs
  for _ in $(seq "$repeats"); do
    local t0 t1
    t0=$(date +%s.%N)
    # Into a file, not /dev/null: GNU grep stops at its first match when its output is /dev/null.
    "$@" > "$work/out" 2>&1 || true
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
  done | median
}

n_logs=$(ls "$work/logs" | wc -l)
bytes=$(du -sb "$work/logs" | cut -f1)
t_titan=$(time_of "$titan" diagnose "$work/logs" --json /dev/null -q)
t_grep=$(time_of env LC_ALL=C grep -E -r -f "$work/patterns.txt" "$work/logs")
t_rg=$(time_of rg --no-config -f "$work/patterns.txt" "$work/logs")
n_dumps=$(ls "$work/fr" | wc -l)
t_fr=$(time_of "$titan" diagnose "$work/fr" --json /dev/null -q)

"$titan" diagnose "$work/logs" --json "$work/logs.json" -q
"$titan" diagnose "$work/fr" --json "$work/fr.json" -q
verdict() {
  /usr/bin/python3 -c 'import json,sys; i=json.load(open(sys.argv[1]))["incidents"][0]; print(i["class"], i["culprit"], i["root"]["text"][:90])' "$1"
}
printf 'machine: %s, %s cores\n' "$(uname -r)" "$(nproc)"
printf 'rank logs: %d files, %.0f MB, %d patterns\n' "$n_logs" "$(echo "$bytes/1000000" | bc -l)" "$(wc -l < "$work/patterns.txt")"
printf '  titan diagnose (full diagnosis)     %6.3f s\n' "$t_titan"
printf '  LC_ALL=C grep -E -r -f (matches)     %6.3f s   titan/grep = %.2fx\n' "$t_grep" "$(echo "$t_titan/$t_grep" | bc -l)"
printf '  rg -f (matches)                      %6.3f s   titan/rg   = %.2fx\n' "$t_rg" "$(echo "$t_titan/$t_rg" | bc -l)"
printf '  verdict: %s\n' "$(verdict "$work/logs.json")"
printf 'flight recorder: %d dumps\n' "$n_dumps"
printf '  titan diagnose                       %6.3f s\n' "$t_fr"
printf '  verdict: %s\n' "$(verdict "$work/fr.json")"
