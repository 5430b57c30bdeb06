#!/usr/bin/env bash
# gpu_check.sh: checks titan's GPU (NVML) collector on a real NVIDIA host, in under 5 minutes.
#
#   bench/gpu_check.sh [BUILD_DIR]        (default: $TITAN_BUILD_DIR, else build/release)
#
# Needs: the NVIDIA driver (libnvidia-ml.so.1), g++ and libfmt-dev, or an existing build. No
# CUDA toolkit. Optional: python3 with torch+CUDA (a short GPU load), a built `titan` binary.
#
# Steps:
#  1. nvml_probe from BUILD_DIR if built there, else compiled directly with g++ (9 small files).
#  2. Idle: the probe prints 20 samples of every signal per GPU (100 ms apart); every GPU must
#     report utilisation, power, memory, temperature and SM clock with no rejected reading.
#  3. Load (if torch+CUDA): 2 x 6 s of bf16 matmuls on GPU 0 with a 300 ms idle gap between them,
#     while the probe samples for 15 s: GPU 0 utilisation must reach >= 0.9, power must rise above
#     idle, energy must grow, the gap must show in the utilisation minimum, and the driver's
#     sample buffer must have given more power points than Collect() calls (sub-interval data).
#  4. Agent (if BUILD_DIR/tools/titan/titan exists): `titan agent` runs 30 s (under load again
#     if torch+CUDA); its /metrics must carry titan_gpu_* for every GPU and report the load.
#  5. Checkpoint staging (if torch+CUDA and BUILD_DIR/python/titan/_titan*.so): async
#     titan.checkpoint.save() of ~1.4 GiB of CUDA tensors (every tensor changed between saves),
#     5 times; the median time save() blocks must be <= 1.5x the median plain
#     `pinned.copy_(t, non_blocking=True)` of every tensor + torch.cuda.synchronize() (the same
#     bytes into preallocated pinned memory), and the last checkpoint must load back equal.
#     Prints both times, last_stats()'s d2h_s, and the old .cpu() path's time for reference.
# Prints PASS/FAIL/SKIP lines and a summary; exit 0 when nothing failed. Logs go to $OUT_DIR
# (default: a fresh temporary directory, printed).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${TITAN_BUILD_DIR:-$ROOT/build/release}}
OUT=${OUT_DIR:-$(mktemp -d /tmp/titan-gpu-check.XXXXXX)}
mkdir -p "$OUT"
START=$(date +%s)
passed=0
failed=0
skipped=0

pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
skip() { echo "SKIP $*"; skipped=$((skipped + 1)); }
# check NAME CONDITION-COMMAND...: PASS or FAIL by the command's status.
check() {
  local name=$1
  shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}
# ge A B: A >= B as numbers.
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b + 0) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }
# field FILE FAMILY GPU KEY: KEY=value of the probe's SERIES line of FAMILY for GPU.
field() {
  awk -v prefix="$2{gpu=\"$3\"" -v key="$4" '
    $1 == "SERIES" && index($2, prefix) == 1 {
      for (i = 3; i <= NF; i++) { n = index($i, "="); if (substr($i, 1, n - 1) == key) { print substr($i, n + 1); exit } }
    }' "$1"
}
summary() {
  echo "----"
  echo "gpu_check: $passed passed, $failed failed, $skipped skipped in $(($(date +%s) - START)) s; logs in $OUT"
  [ "$failed" -eq 0 ]
  exit $?
}

echo "== titan gpu_check ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname)); logs in $OUT"

# ---- 0. The driver.
if [ -z "${TITAN_NVML_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1'; then
  fail "libnvidia-ml.so.1 not found (no NVIDIA driver here, or set TITAN_NVML_LIBRARY)"
  summary
fi
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/  nvidia-smi: /'
fi

# ---- 1. The probe.
PROBE=$BUILD/src/collectors/nvml_probe
if [ ! -x "$PROBE" ]; then
  PROBE=$OUT/nvml_probe
  echo "== compiling nvml_probe with g++ (no $BUILD/src/collectors/nvml_probe)"
  srcs="src/collectors/nvml_probe.cc src/collectors/nvml_collector.cc src/collectors/nvml_background.cc
        src/collectors/nvml_loader.cc src/collectors/nvml_signals.cc src/base/status.cc src/base/check.cc
        src/base/clock.cc src/base/log.cc src/metrics/signal.cc src/metrics/series.cc src/metrics/registry.cc"
  mkdir -p "$OUT/obj"
  if ! (cd "$ROOT" && printf '%s\n' $srcs | xargs -P "$(nproc)" -I{} sh -c \
      'g++ -std=c++20 -O2 -I. -c {} -o "$0/obj/$(echo {} | tr / _).o"' "$OUT") > "$OUT/compile.log" 2>&1 ||
     ! g++ -o "$PROBE" "$OUT"/obj/*.o -lfmt -ldl -pthread >> "$OUT/compile.log" 2>&1; then
    fail "compile nvml_probe (needs g++ >= 12 and libfmt-dev; see $OUT/compile.log)"
    tail -5 "$OUT/compile.log"
    summary
  fi
fi
pass "nvml_probe ready: $PROBE"

# ---- 2. Idle.
echo "== idle: 20 samples of every signal per GPU"
"$PROBE" --samples 20 --interval-ms 100 > "$OUT/idle.txt" 2> "$OUT/idle.err"
rc=$?
grep -E "^t=" "$OUT/idle.txt"
if [ $rc -eq 3 ]; then
  fail "NVML unavailable: $(grep NVML_UNAVAILABLE "$OUT/idle.txt")"
  summary
fi
check "probe exit status 0 (got $rc; errors: $(grep -c COLLECT_ERROR "$OUT/idle.txt"))" [ $rc -eq 0 ]
gpus=$(grep -c '^SERIES titan_gpu_info{' "$OUT/idle.txt")
check "NVML lists GPUs ($gpus)" [ "$gpus" -gt 0 ]
for ((g = 0; g < gpus; g++)); do
  for family in titan_gpu_utilization_ratio titan_gpu_power_watts titan_gpu_memory_used_bytes \
                titan_gpu_temperature_celsius titan_gpu_sm_clock_hertz; do
    points=$(field "$OUT/idle.txt" $family $g points)
    check "gpu $g $family recorded (points=${points:-none}, last=$(field "$OUT/idle.txt" $family $g last))" \
      ge "${points:-0}" 1
  done
done
check "no rejected reading when idle ($(awk '$1=="INVALID"{print $2}' "$OUT/idle.txt"))" \
  [ "$(awk '$1=="INVALID"{print $2}' "$OUT/idle.txt")" = 0 ]
idle_power=$(field "$OUT/idle.txt" titan_gpu_power_watts 0 max)

# Side by side: one titan Collect() of every GPU against one nvidia-smi query of the same fields
# (what a user would otherwise run in a loop).
collect_us=$(awk '$1 == "COLLECT_US" { sub("mean=", "", $2); print $2 }' "$OUT/idle.txt")
if command -v nvidia-smi > /dev/null; then
  smi_start=$(date +%s%N)
  for _ in 1 2 3 4 5; do
    nvidia-smi --query-gpu=index,uuid,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,clocks.mem,temperature.gpu,clocks_event_reasons.active \
      --format=csv,noheader > /dev/null 2>&1 ||
    nvidia-smi --query-gpu=index,uuid,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,clocks.mem,temperature.gpu \
      --format=csv,noheader > /dev/null 2>&1
  done
  smi_us=$((($(date +%s%N) - smi_start) / 5000))
  echo "TIMING titan Collect() of all $gpus GPUs: ${collect_us} us; nvidia-smi --query-gpu (same fields): ${smi_us} us; ratio $(awk -v a="$smi_us" -v b="$collect_us" 'BEGIN { if (b > 0) printf "%.0fx", a / b; else print "n/a" }')"
else
  echo "TIMING titan Collect() of all $gpus GPUs: ${collect_us} us (no nvidia-smi to compare)"
fi

# ---- 3. Load.
have_torch=0
if command -v python3 > /dev/null &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  have_torch=1
fi
start_load() {  # start_load LOG: 6 s matmuls, 300 ms idle, 6 s matmuls on GPU 0; prints READY
  python3 - > "$1" 2>&1 << 'EOF' &
import time, torch
a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
(a @ b).sum().item()  # CUDA context and cuBLAS are up
print("READY", flush=True)
def burn(seconds):
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(8):
            c = a @ b
        torch.cuda.synchronize()
burn(6.0)
print("GAP", time.time(), flush=True)
time.sleep(0.3)
burn(6.0)
print("DONE", time.time(), flush=True)
EOF
  load_pid=$!
  for _ in $(seq 1 600); do
    grep -q READY "$1" 2> /dev/null && return 0
    kill -0 $load_pid 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}
if [ $have_torch -eq 1 ]; then
  echo "== load: bf16 matmuls on GPU 0 with a 300 ms gap, probe sampling every 100 ms for 15 s"
  if start_load "$OUT/load.log"; then
    "$PROBE" --samples 150 --interval-ms 100 > "$OUT/load.txt" 2> "$OUT/load.err"
    rc=$?
    wait $load_pid
    grep -E '^t=.* gpu=0 ' "$OUT/load.txt" | awk 'NR % 10 == 1' | head -n 15
    check "probe under load exit status 0 (got $rc)" [ $rc -eq 0 ]
    util_max=$(field "$OUT/load.txt" titan_gpu_utilization_ratio 0 max)
    util_min=$(field "$OUT/load.txt" titan_gpu_utilization_ratio 0 min)
    power_max=$(field "$OUT/load.txt" titan_gpu_power_watts 0 max)
    power_points=$(field "$OUT/load.txt" titan_gpu_power_watts 0 points)
    energy=$(field "$OUT/load.txt" titan_gpu_energy_joules_total 0 increase)
    check "gpu 0 utilisation reaches 0.9 under load (max=$util_max)" ge "$util_max" 0.9
    check "the 300 ms idle gap shows in gpu 0 utilisation (min=$util_min < 0.7)" lt "$util_min" 0.7
    check "gpu 0 power rises under load (max=$power_max W, idle max=$idle_power W)" \
      ge "$power_max" "$(awk -v p="$idle_power" 'BEGIN { print p + 30 }')"
    check "gpu 0 energy grows under load (+$energy J)" ge "$energy" 1
    check "driver sample buffer gives sub-interval power points ($power_points points for 150 Collects)" \
      ge "$power_points" 300
    check "no rejected reading under load ($(awk '$1=="INVALID"{print $2}' "$OUT/load.txt"))" \
      [ "$(awk '$1=="INVALID"{print $2}' "$OUT/load.txt")" = 0 ]
  else
    fail "GPU load did not start (see $OUT/load.log)"
    tail -5 "$OUT/load.log"
  fi
else
  skip "GPU load: no python3 with torch+CUDA"
fi

# ---- 4. The agent.
TITAN=$BUILD/tools/titan/titan
if [ -x "$TITAN" ]; then
  port=$((19400 + RANDOM % 500))
  echo "== titan agent for 30 s on 127.0.0.1:$port"
  "$TITAN" agent --listen 127.0.0.1 --port $port --socket "" --run-for 30 > "$OUT/agent.out" 2> "$OUT/agent.err" &
  agent_pid=$!
  loaded=0
  if [ $have_torch -eq 1 ] && start_load "$OUT/load2.log"; then loaded=1; fi
  sleep 20
  scrape() {
    if command -v curl > /dev/null; then
      curl -sf "http://127.0.0.1:$port/metrics"
    else
      python3 -c "import urllib.request, sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=5).read().decode())"
    fi
  }
  scrape > "$OUT/metrics.txt" 2> "$OUT/scrape.err"
  wait $agent_pid
  rc=$?
  [ $loaded -eq 1 ] && wait $load_pid
  check "titan agent ran 30 s and exited 0 (got $rc)" [ $rc -eq 0 ]
  check "agent did not report NVML missing" bash -c "! grep -q 'NVML not found' '$OUT/agent.err'"
  for ((g = 0; g < gpus; g++)); do
    check "/metrics has titan_gpu_utilization_ratio for gpu $g" \
      grep -q "^titan_gpu_utilization_ratio{gpu=\"$g\"" "$OUT/metrics.txt"
  done
  if [ $loaded -eq 1 ]; then
    wmax=$(awk -F'} ' '/^titan_gpu_utilization_ratio_window_max\{gpu="0"/ { print $2; exit }' "$OUT/metrics.txt")
    check "agent window max of gpu 0 utilisation under load >= 0.9 ($wmax)" ge "$wmax" 0.9
  fi
  grep -E '^titan_gpu_(utilization_ratio|power_watts|temperature_celsius|sm_clock_hertz)\{gpu="0"' "$OUT/metrics.txt" | head
else
  skip "titan agent: no $TITAN (build it with scripts/build.sh release to include this step)"
fi

# ---- 5. Checkpoint: save() blocking time of CUDA tensors (the GPU path, python/titan/_staging.py).
py_ext=$(ls "$BUILD"/python/titan/_titan*.so 2> /dev/null | head -n 1)
if [ $have_torch -eq 1 ] && [ -n "$py_ext" ]; then
  # The source tree's titan/*.py with the built extension (the build's copies may be older).
  mkdir -p "$OUT/py/titan"
  ln -sf "$ROOT"/python/titan/*.py "$py_ext" "$OUT/py/titan/"
  echo "== checkpoint: async save() of ~1.4 GiB of CUDA tensors vs a plain pinned copy_"
  PYTHONPATH=$OUT/py timeout 180 python3 - "$OUT/ckpt" > "$OUT/ckpt.log" 2>&1 << 'EOF'
import statistics, sys, time
import torch
import titan.checkpoint as ck

REPS = 5
d = sys.argv[1]
torch.manual_seed(0)
# A model's shape: large fp32 and bf16 matrices and many small vectors, 1.4 GiB in all.
state = {f"w{i}": torch.randn(4096, 6144, device="cuda:0") for i in range(12)}
state.update({f"h{i}": torch.randn(4096, 3072, device="cuda:0").bfloat16() for i in range(12)})
state.update({f"n{i}": torch.randn(4096, device="cuda:0") for i in range(64)})
total = sum(t.numel() * t.element_size() for t in state.values())


def timed(fn):
    torch.cuda.synchronize()  # nothing queued: only fn's own work is timed
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


pinned = {k: torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for k, t in state.items()}


def copy():
    for k, t in state.items():
        pinned[k].copy_(t, non_blocking=True)
    torch.cuda.synchronize()


copy()  # warm-up
copy_s = statistics.median(timed(copy) for _ in range(REPS))
cpu_s = statistics.median(timed(lambda: [t.cpu() for t in state.values()]) for _ in range(3))
del pinned

ck.save(state, 0, dir=d, keep_last=2)  # warm-up: allocates the pinned staging memory
ck.wait()
blocking, stats = [], []
for i in range(1, REPS + 1):
    for t in state.values():
        t.add_(1)  # a training step: every chunk changes
    blocking.append(timed(lambda: ck.save(state, i, dir=d, keep_last=2)))
    ck.wait()
    stats.append(ck.last_stats())
block_s = statistics.median(blocking)

target = {k: torch.zeros_like(t) for k, t in state.items()}
ck.load_latest(d, target)
equal = all(torch.equal(target[k], t) for k, t in state.items())


def med(key):
    return statistics.median(s[key] for s in stats)


print(f"TIMING state: {total / 2**30:.2f} GiB in {len(state)} CUDA tensors")
print(f"TIMING pinned copy_ + synchronize: median {copy_s * 1e3:.1f} ms "
      f"({total / copy_s / 1e9:.1f} GB/s)")
print(f"TIMING save() blocking: median {block_s * 1e3:.1f} ms (each: "
      f"{' '.join(f'{b * 1e3:.1f}' for b in blocking)} ms); last_stats() blocking_s "
      f"{med('blocking_s') * 1e3:.1f} ms, d2h_s {med('d2h_s') * 1e3:.1f} ms")
print(f"TIMING old path (.cpu() of every tensor): median {cpu_s * 1e3:.1f} ms")
print(f"TIMING background: write_s {med('write_s'):.2f} s, commit_s {med('commit_s'):.3f} s")
print(f"STAGED {stats[-1]['staged_bytes']} TOTAL {total}")
print(f"RATIO {block_s / copy_s:.3f}")
print(f"LOADED_EQUAL {int(equal)}")
EOF
  rc=$?
  grep -E '^TIMING' "$OUT/ckpt.log"
  ratio=$(awk '$1 == "RATIO" { print $2 }' "$OUT/ckpt.log")
  check "checkpoint bench ran (exit status $rc; log $OUT/ckpt.log)" [ $rc -eq 0 ]
  check "save() blocks <= 1.5x a plain pinned copy_ of the same bytes (ratio ${ratio:-none})" \
    ge 1.5 "${ratio:-999}"
  check "save() staged every byte ($(grep '^STAGED' "$OUT/ckpt.log"))" \
    awk '$1 == "STAGED" { ok = ($2 == $4) } END { exit !ok }' "$OUT/ckpt.log"
  check "the last checkpoint loads back equal" grep -q '^LOADED_EQUAL 1' "$OUT/ckpt.log"
  [ $rc -eq 0 ] || tail -5 "$OUT/ckpt.log"
elif [ $have_torch -eq 0 ]; then
  skip "checkpoint GPU staging: no python3 with torch+CUDA"
else
  skip "checkpoint GPU staging: no titan Python module in $BUILD/python (a TITAN_PYTHON build)"
fi

summary
