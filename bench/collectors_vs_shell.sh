#!/usr/bin/env bash
# What one sampling round of titan's host collectors costs, side by side with what a user would
# otherwise run, on the same /proc files in the same run:
#   1. a shell loop that cats the files each round (fork+exec of cat per round),
#   2. a shell loop that reads them with bash's `read` builtin (no fork),
#   3. titan: one round of the cpu, memory, net, disk and psi collectors (collectors_benchmark's
#      BM_HostRound: read, parse, record into series with window stats and flight recorder),
#   4. one scrape of prometheus-node-exporter with only the cpu, meminfo, vmstat, netdev,
#      diskstats and pressure collectors (read, parse, render text, HTTP), if it is installed
#      (Debian: apt-get install prometheus-node-exporter).
# All read /proc/stat, meminfo, vmstat, net/dev, diskstats and pressure/{cpu,memory,io}.
#
#   bench/collectors_vs_shell.sh [BUILD_DIR] [N]     (defaults: build/release, 1000 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
n=${2:-1000}
bench_bin="$build/src/collectors/collectors_benchmark"
[ -x "$bench_bin" ] || { echo "missing $bench_bin: build the collectors_benchmark target" >&2; exit 1; }

files=(/proc/stat /proc/meminfo /proc/vmstat /proc/net/dev /proc/diskstats)
for r in cpu memory io; do [ -r "/proc/pressure/$r" ] && files+=("/proc/pressure/$r"); done

# CPU seconds (user+sys) used so far by this shell and its children, into $CPU. `times` must run in
# this shell (not in a $(...) subshell), so it writes to a file.
tf=$(mktemp)
trap 'rm -f "$tf"' EXIT
snap_cpu() {
  times > "$tf"
  CPU=$(awk '{for (i = 1; i <= 2; i++) {v = $i; sub("s$", "", v); split(v, p, "m"); t += p[1] * 60 + p[2]}} END {printf "%.6f", t}' "$tf")
}
now() { date +%s.%N; }
per_round_us() { awk -v t="$1" -v n="$n" 'BEGIN{printf "%.1f", t/n*1e6}'; }

echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); $n rounds; files: ${files[*]}"

# 1. cat
snap_cpu; c0=$CPU; w0=$(now)
for ((i = 0; i < n; i++)); do cat "${files[@]}" > /dev/null; done
w1=$(now); snap_cpu; c1=$CPU
cat_wall=$(awk -v a="$w0" -v b="$w1" 'BEGIN{print b-a}')
cat_cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN{print b-a}')

# 2. bash read builtin
snap_cpu; c0=$CPU; w0=$(now)
for ((i = 0; i < n; i++)); do
  for f in "${files[@]}"; do IFS= read -r -d '' _ < "$f" || true; done
done
w1=$(now); snap_cpu; c1=$CPU
read_wall=$(awk -v a="$w0" -v b="$w1" 'BEGIN{print b-a}')
read_cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN{print b-a}')

# 3. titan (Google Benchmark picks its own iteration count; times are per round)
json=$("$bench_bin" --benchmark_filter='^BM_HostRound$' --benchmark_min_time=1 \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_format=json 2>/dev/null)
titan_wall_us=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin)
b=[x for x in d["benchmarks"] if x.get("aggregate_name")=="median"][0]; print("%.1f" % (b["real_time"]/1e3))')
titan_cpu_us=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin)
b=[x for x in d["benchmarks"] if x.get("aggregate_name")=="median"][0]; print("%.1f" % (b["cpu_time"]/1e3))')

printf '\n%-44s %12s %12s\n' "per sampling round" "wall (us)" "CPU (us)"
printf '%-44s %12s %12s\n' "shell: cat of the ${#files[@]} files" "$(per_round_us "$cat_wall")" "$(per_round_us "$cat_cpu")"
printf '%-44s %12s %12s\n' "shell: bash read builtin of the files" "$(per_round_us "$read_wall")" "$(per_round_us "$read_cpu")"
printf '%-44s %12s %12s\n' "titan: cpu+memory+net+disk+psi collectors" "$titan_wall_us" "$titan_cpu_us"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.1fx", a/b; else print "n/a" }'; }
echo "ratio cat / titan:  wall $(ratio "$(per_round_us "$cat_wall")" "$titan_wall_us"), CPU $(ratio "$(per_round_us "$cat_cpu")" "$titan_cpu_us")"
echo "ratio read / titan: wall $(ratio "$(per_round_us "$read_wall")" "$titan_wall_us"), CPU $(ratio "$(per_round_us "$read_cpu")" "$titan_cpu_us")"

# 4. node_exporter
ne=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [ -z "$ne" ]; then
  echo "node_exporter: not installed (apt-get install prometheus-node-exporter); skipped"
  exit 0
fi
port=$((20000 + RANDOM % 20000))
"$ne" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
  --collector.cpu --collector.meminfo --collector.vmstat --collector.netdev \
  --collector.diskstats --collector.pressure --log.level=error > /dev/null 2>&1 &
ne_pid=$!
trap 'kill $ne_pid 2>/dev/null; rm -f "$tf"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/metrics" > /dev/null 2>&1 && break; sleep 0.1; done
scrapes=$(( n / 10 > 20 ? n / 10 : 20 ))
for _ in $(seq 5); do curl -sf "http://127.0.0.1:$port/metrics" > /dev/null; done  # warm up
# On-CPU nanoseconds of all of node_exporter's threads (schedstat: finer than utime/stime ticks).
ne_cpu() { cat /proc/$ne_pid/task/*/schedstat 2>/dev/null | awk '{t += $1} END {printf "%.9f", t / 1e9}'; }
c0=$(ne_cpu); w0=$(now)
for ((i = 0; i < scrapes; i++)); do curl -sf "http://127.0.0.1:$port/metrics" > /dev/null; done
w1=$(now); c1=$(ne_cpu)
ne_wall_us=$(awk -v a="$w0" -v b="$w1" -v s="$scrapes" 'BEGIN{printf "%.1f", (b-a)/s*1e6}')
ne_cpu_us=$(awk -v a="$c0" -v b="$c1" -v s="$scrapes" 'BEGIN{printf "%.1f", (b-a)/s*1e6}')
ne_lines=$(curl -sf "http://127.0.0.1:$port/metrics" | grep -vc '^#')
kill $ne_pid; wait $ne_pid 2>/dev/null || true; trap 'rm -f "$tf"' EXIT
echo
printf '%-44s %12s %12s\n' "node_exporter $("$ne" --version 2>&1 | head -1 | awk '{print $3}') scrape ($scrapes, curl)" "$ne_wall_us" "$ne_cpu_us"
echo "  (wall includes starting curl; CPU is node_exporter's own, from its threads' schedstat; $ne_lines samples per scrape)"
echo "ratio node_exporter scrape / titan round: wall $(ratio "$ne_wall_us" "$titan_wall_us"), CPU $(ratio "$ne_cpu_us" "$titan_cpu_us")"
