#!/usr/bin/env bash
# titan report at scale: a 1,000-rank trace analysis and a 1,000,000-request load run, drawn and
# rendered in headless Chromium. Prints, for each: the input's size, the time `titan report`
# takes to write the page against the time of the analysis that produced the input, the page's
# size, and the time Chromium takes to render it (the page's own data-titan-render-ms, from its
# first script to the last plot drawn, and the whole headless run, browser start included).
#
# usage: bench/report_bench.sh [BUILD_DIR]   (titan built in BUILD_DIR; chromium-headless-shell)
#   The 1,000-rank set is built once from a real rank (bench/trace_make_set.py), in /tmp.
#   The load result is a real short run against titan serve-sim, stretched to 1,000,000
#   requests (bench/report_make_load.py says why and how).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build/release}"
TITAN="$BUILD/tools/titan/titan"
SRC="$ROOT/../shared/data/traces/hta_trace_filter_2rank/sampled_rank-0.json.gz"
SET=/tmp/titan_report_bench_1000
WORK=$(mktemp -d /tmp/titan-report-bench-XXXXXX)
trap 'rm -rf "$WORK"; [ -n "${SIM:-}" ] && kill "$SIM" 2>/dev/null || true' EXIT
CHROME=$(command -v chromium-headless-shell || command -v chromium)
[[ -x "$TITAN" ]] || { echo "build titan first: cmake --build $BUILD --target titan" >&2; exit 1; }
[[ -f "$SRC" ]] || { echo "real trace not found: $SRC" >&2; exit 1; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
secs() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
render() {  # html -> "render_ms wall_s"
  local t0 t1 dom
  t0=$(date +%s.%N)
  dom=$("$CHROME" --headless --no-sandbox --disable-gpu --virtual-time-budget=30000 --dump-dom \
    "file://$1" 2>/dev/null | grep -o '<html[^>]*>' | head -1)
  t1=$(date +%s.%N)
  local ms errors
  ms=$(echo "$dom" | sed -n 's/.*data-titan-render-ms="\([0-9.]*\)".*/\1/p')
  errors=$(echo "$dom" | grep -c 'data-titan-errors' || true)
  [[ -n "$ms" && "$errors" == 0 ]] || { echo "the page did not render cleanly: $dom" >&2; exit 1; }
  echo "$ms $(echo "$t1 - $t0" | bc)"
}

# 1. 1,000-rank trace analysis.
if [[ ! -f "$SET/rank999.json.gz" ]]; then
  echo "building the 1,000-rank set in $SET (once, a few minutes)..." >&2
  /usr/bin/python3 "$ROOT/bench/trace_make_set.py" "$SRC" "$SET" --ranks 1000 --late-rank 417 --late-us 3000 > /dev/null
fi
A=$(secs "$TITAN" trace analyze --json "$SET" --threads 2)
"$TITAN" trace analyze --json "$SET" --threads 2 > "$WORK/trace.json"
W=$(secs "$TITAN" report "$WORK/trace.json" -o "$WORK/trace.html" -q)
read -r MS WALL < <(render "$WORK/trace.html")
printf 'trace, 1000 ranks: analysis %s s, input %s MB; report written in %s s (%.1f%% of the analysis), page %s MB; rendered in %s ms (headless run %s s)\n' \
  "$A" "$(( $(stat -c %s "$WORK/trace.json") / 1000000 ))" "$W" "$(echo "100 * $W / $A" | bc -l)" \
  "$(echo "scale=2; $(stat -c %s "$WORK/trace.html") / 1000000" | bc)" "$MS" "$WALL"

# 2. 1,000,000-request load run.
PORT=$((20000 + RANDOM % 20000))
"$TITAN" serve-sim --port "$PORT" --max-num-seqs 16 --itl-base 2ms > /dev/null 2>&1 &
SIM=$!
sleep 1
"$TITAN" load --url "http://127.0.0.1:$PORT" --arrivals poisson:rate=50 --duration 20s \
  --input-tokens 32 --output-tokens 8 --slo p99_ttft=200ms --json "$WORK/real.json" -q > /dev/null || true
/usr/bin/python3 "$ROOT/bench/report_make_load.py" "$WORK/real.json" "$WORK/load.json" --requests 1000000 --rate 100
W=$(secs "$TITAN" report "$WORK/load.json" -o "$WORK/load.html" -q)
read -r MS WALL < <(render "$WORK/load.html")
printf 'load, 1,000,000 requests (10,000 s timeline, 4 scraped series at 250 ms): input %s MB; report written in %s s; page %s MB; rendered in %s ms (headless run %s s)\n' \
  "$(( $(stat -c %s "$WORK/load.json") / 1000000 ))" "$W" \
  "$(echo "scale=2; $(stat -c %s "$WORK/load.html") / 1000000" | bc)" "$MS" "$WALL"
