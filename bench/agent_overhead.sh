#!/usr/bin/env bash
# CPU cost of `titan agent` sampling every host collector, side by side with reading the same
# /proc files from a shell loop at the same rate (the cheapest thing a user could script), over
# the same wall time in the same run. Prints % of one core and the ratio.
#
#   bench/agent_overhead.sh [seconds=60] [titan binary]
# Target (issue: titan agent): <= 1 % of a core at 100 ms, <= 5 % at 10 ms.
set -euo pipefail
seconds=${1:-60}
titan=${2:-$(dirname "$0")/../build/release/tools/titan/titan}
hz=$(getconf CLK_TCK)
files="/proc/stat /proc/meminfo /proc/vmstat /proc/net/dev /proc/diskstats"
for f in /proc/pressure/cpu /proc/pressure/memory /proc/pressure/io; do
  [ -r "$f" ] && files="$files $f"
done

cpu_ticks() {  # utime+stime+cutime+cstime of a pid (children included: the shell's cats)
  awk '{print $14+$15+$16+$17}' "/proc/$1/stat"
}

measure_agent() {
  local interval=$1 tmp
  tmp=$(mktemp -d)
  "$titan" agent --port 0 --socket "$tmp/s" --interval "$interval" --disable nvml \
      --log-level warning >"$tmp/log" 2>&1 &
  local pid=$!
  sleep 2  # start-up (series creation) is not steady-state cost
  local t0 w0
  t0=$(cpu_ticks $pid); w0=$(date +%s.%N)
  sleep "$seconds"
  local t1 w1
  t1=$(cpu_ticks $pid); w1=$(date +%s.%N)
  kill $pid; wait $pid 2>/dev/null || true
  rm -rf "$tmp"
  echo "scale=3; 100 * ($t1 - $t0) / $hz / ($w1 - $w0)" | bc
}

measure_shell() {
  local interval_s=$1
  bash -c "while :; do cat $files >/dev/null; sleep $interval_s; done" &
  local pid=$!
  sleep 2
  local t0 w0 t1 w1
  t0=$(cpu_ticks $pid); w0=$(date +%s.%N)
  sleep "$seconds"
  # children's ticks are only added to cutime once reaped, which the loop does at once
  t1=$(cpu_ticks $pid); w1=$(date +%s.%N)
  kill $pid; wait $pid 2>/dev/null || true
  echo "scale=3; 100 * ($t1 - $t0) / $hz / ($w1 - $w0)" | bc
}

echo "machine: $(nproc) cores, $(uname -r); $seconds s per measurement; files: $files"
printf '%-10s %16s %22s %8s\n' interval "titan agent %core" "shell cat loop %core" ratio
for pair in 100ms:0.1 10ms:0.01; do
  interval=${pair%%:*}; secs=${pair##*:}
  agent=$(measure_agent "$interval")
  shell=$(measure_shell "$secs")
  ratio=$(echo "scale=1; $shell / ($agent + 0.0001)" | bc)
  printf '%-10s %16s %22s %7sx\n' "$interval" "$agent" "$shell" "$ratio"
done
