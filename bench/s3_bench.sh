#!/usr/bin/env bash
# Checkpoint upload and download through S3: `titan ckpt cp` against rclone (Debian's, S3
# backend), both on the same real Ceph RADOS gateway (scripts/rgw.sh, memstore OSD on loopback),
# in the same run, alternating, ROUNDS times. The checkpoint is a real titan.checkpoint save of
# GIB GiB of float32 tensors (one rank, one data file, 8 MiB chunks).
#
#   titan up    titan ckpt cp DIR s3://bench/titan-R          (every chunk's XXH3 checked too)
#   rclone up   rclone copy DIR/step_N rgw:bench/rclone-R/step_N    (defaults: 4 transfers,
#               4 parts of 5 MiB in flight per file)
#   rclone up+  the same with --s3-upload-concurrency 8 --s3-chunk-size 16M (titan's defaults)
#   down        the other way, into an empty directory
#   tiering     the time an async titan.checkpoint.save() blocks the caller: 4 saves of the same
#               state (changed between saves, 2 s apart) to a local directory, without and with
#               a mirror to s3:// copying in the background, and node-local (each rank uploads
#               and commits at s3:// from the writer's thread: the next save waits for that).
#               TIERING_SAVES (default 4) saves per variant, the first not counted (the store
#               holds GIB*4+2 GiB: node-local uploads every save); TIERING_VARIANTS picks them.
#   restore     a restart onto an empty local disk: `titan run --checkpoint-dir DIR
#               --checkpoint-mirror s3://...` of a worker that imports torch, builds its state
#               and calls load_latest, timed whole (exec to exit), with titan run's prefetch
#               (default) and with --no-checkpoint-prefetch (the worker reads the store itself).
#               RESTORE_STARTUP_S (default 0) adds that much start-up work (sleep) before
#               load_latest, standing for what a real job does first (CUDA, NCCL, the model).
#
# Prints seconds per run and the median ratios rclone/titan (> 1: titan is faster).
# usage: bench/s3_bench.sh [BUILD_DIR] [GIB] [ROUNDS]
#   SECTIONS="copy tiering restore" (default: all three) picks what runs.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build/release}"
GIB="${2:-1}"
ROUNDS="${3:-3}"
TITAN="$BUILD/tools/titan/titan"
[[ -x "$TITAN" ]] || { echo "build titan first: cmake --build $BUILD --target titan _titan" >&2; exit 1; }
command -v rclone >/dev/null || { echo "rclone missing: run scripts/bootstrap.sh" >&2; exit 1; }
WORK=$(mktemp -d /tmp/titan-s3-bench-XXXXXX)
trap 'bash "$ROOT/scripts/rgw.sh" stop "$WORK/rgw" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
# A fresh gateway per round: memstore frees deleted objects only after RGW's garbage
# collection, and a full OSD makes every write hang.
export TITAN_RGW_MEMSTORE_BYTES=$(( (GIB * 4 + 2) << 30 ))
unset AWS_CA_BUNDLE  # rclone's SDK refuses a CA bundle on a plain-HTTP endpoint
fresh_store() {
  bash "$ROOT/scripts/rgw.sh" stop "$WORK/rgw" >/dev/null 2>&1 || true
  eval "$(bash "$ROOT/scripts/rgw.sh" start "$WORK/rgw" 2>/dev/null)"
  export RCLONE_CONFIG_RGW_TYPE=s3 RCLONE_CONFIG_RGW_PROVIDER=Ceph
  export RCLONE_CONFIG_RGW_ENDPOINT="$AWS_ENDPOINT_URL" RCLONE_CONFIG_RGW_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID"
  export RCLONE_CONFIG_RGW_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY"
  rclone -q mkdir rgw:bench
}

SRC="$WORK/local"
PYTHONPATH="$BUILD/python" OMP_NUM_THREADS=1 /usr/bin/python3 - "$SRC" "$GIB" <<'EOF'
import sys, torch, titan.checkpoint as ck
g = torch.Generator().manual_seed(0)
state = {"w%d" % i: torch.randn(64 << 18, generator=g) for i in range(int(sys.argv[2]) * 16)}
ck.save(state, 100, async_=False, dir=sys.argv[1])
EOF
STEP=step_0000000100
echo "checkpoint: $(du -sh "$SRC/$STEP" | cut -f1) in $(ls "$SRC/$STEP" | wc -l) files"

SECTIONS="${SECTIONS:-copy tiering restore}"
has() { [[ " $SECTIONS " == *" $1 "* ]]; }
secs() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A T
if has copy; then
for r in $(seq 1 "$ROUNDS"); do
  fresh_store
  T[tu$r]=$(secs "$TITAN" ckpt cp "$SRC" "s3://bench/titan-$r")
  T[ru$r]=$(secs rclone copy "$SRC/$STEP" "rgw:bench/rclone-$r/$STEP")
  T[rt$r]=$(secs rclone copy --s3-upload-concurrency 8 --s3-chunk-size 16M "$SRC/$STEP" "rgw:bench/rclonet-$r/$STEP")
  T[td$r]=$(secs "$TITAN" ckpt cp "s3://bench/titan-$r" "$WORK/titan-down-$r")
  T[rd$r]=$(secs rclone copy "rgw:bench/rclone-$r/$STEP" "$WORK/rclone-down-$r/$STEP")
  cmp "$SRC/$STEP/"*.data "$WORK/titan-down-$r/$STEP/"*.data
  cmp "$SRC/$STEP/"*.data "$WORK/rclone-down-$r/$STEP/"*.data
  printf "round %d: up titan %ss rclone %ss rclone+ %ss | down titan %ss rclone %ss\n" "$r" \
    "${T[tu$r]}" "${T[ru$r]}" "${T[rt$r]}" "${T[td$r]}" "${T[rd$r]}"
  rm -rf "$WORK/titan-down-$r" "$WORK/rclone-down-$r"
done
ratio() {  # median over rounds of rclone/titan
  local out=() r
  for r in $(seq 1 "$ROUNDS"); do out+=("$(echo "${T[$1$r]} / ${T[$2$r]}" | bc -l)"); done
  printf "%.2f" "$(median "${out[@]}")"
}
mib=$((GIB * 1024))
for k in tu ru rt td rd; do
  m=$(median $(for r in $(seq 1 "$ROUNDS"); do echo "${T[$k$r]}"; done))
  printf "%-12s median %6.2f s  %5.0f MiB/s\n" \
    "$(case $k in tu) echo "titan up";; ru) echo "rclone up";; rt) echo "rclone+ up";; td) echo "titan down";; rd) echo "rclone down";; esac)" \
    "$m" "$(echo "$mib / $m" | bc -l)"
done
echo "ratio rclone/titan: upload $(ratio ru tu)x (tuned rclone $(ratio rt tu)x), download $(ratio rd td)x"
fi

if has tiering; then
# One process and a fresh gateway per variant: a full memstore OSD makes every write hang.
declare -A VARIANT=([local]="local" [local+mirror]="local+mirror s3://bench/tiered"
                    [node-local]="node-local s3://bench/node-local 1")
for name in ${TIERING_VARIANTS:-local local+mirror node-local}; do
variant=${VARIANT[$name]:?"TIERING_VARIANTS: unknown variant $name"}
fresh_store
# On this one machine the gateway and the OSD share the cores with the "training" process; a real
# store is elsewhere. TIERING_STORE_NICE=19 lowers their priority to approximate that.
# TIERING_PIN=1 puts the store's processes (every thread) on CPU 1 and the "training" process on
# CPU 0: the store's own work then happens elsewhere, as on a cluster (the sender's network
# stack still runs on CPU 0).
if [ -n "${TIERING_STORE_NICE:-}" ]; then
  renice -n "$TIERING_STORE_NICE" -p $(cat "$WORK"/rgw/*.pid) >/dev/null
fi
PIN=()
if [ -n "${TIERING_PIN:-}" ]; then
  for pid in $(cat "$WORK"/rgw/*.pid); do taskset -a -p -c 1 "$pid" >/dev/null; done
  PIN=(taskset -c 0)
fi
# shellcheck disable=SC2086 # the variant's words are its arguments
PYTHONPATH="$BUILD/python" OMP_NUM_THREADS=1 "${PIN[@]}" /usr/bin/python3 - "$WORK" "$GIB" $variant <<'EOF'
import os, statistics, sys, time, torch, titan.checkpoint as ck
work, gib, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
mirror = sys.argv[4] if len(sys.argv) > 4 else None
node_local = len(sys.argv) > 5
g = torch.Generator().manual_seed(1)
state = {"w%d" % i: torch.randn(64 << 18, generator=g) for i in range(gib * 16)}
blocking, calls = [], []
saves = int(os.environ.get("TIERING_SAVES", "4"))
for step in range(1, saves + 1):
    for t in state.values():
        t.add_(1.0)  # every chunk changes, as after a training interval
    called = time.time()
    ck.save(state, step, dir=f"{work}/tier-{name}", mirror=mirror, node_local=node_local,
            keep_last=2)
    calls.append(time.time() - called)
    blocking.append(ck.last_stats()["blocking_s"])
    time.sleep(2.0)  # the training between two saves
started = time.time()
durable = ck.wait(durable=True)
print(f"tiering: {name:13s} save() blocked median {statistics.median(blocking[1:]):.3f} s "
      f"(saves 2-{saves}: {', '.join(f'{b:.3f}' for b in blocking[1:])}), whole call "
      f"{statistics.median(calls[1:]):.3f} s (with its wait for the previous save); "
      f"durable step {durable}, waited {time.time() - started:.1f} s for the last copy")
EOF
done
fi

if has restore; then
fresh_store
"$TITAN" ckpt cp "$SRC" s3://bench/restore >/dev/null 2>&1
cat >"$WORK/restore_worker.py" <<EOF
import os, time, torch, titan.checkpoint as ck
state = {"w%d" % i: torch.empty(64 << 18) for i in range($GIB * 16)}
time.sleep(${RESTORE_STARTUP_S:-0})
started = time.time()
step = ck.load_latest(os.environ["TITAN_CHECKPOINT_DIR"], state)
print(f"RESTORED {step} load_latest {time.time() - started:.2f} s", flush=True)
EOF
restore() {  # restore [FLAGS...]: one titan run onto an empty local directory -> "WALL LOAD"
  local dir="$WORK/restore-local" out
  rm -rf "$dir" "$WORK/restore-run"
  out=$( { PYTHONPATH="$BUILD/python" /usr/bin/time -f "WALL %e" "$TITAN" run --quiet \
      --run-dir "$WORK/restore-run" --checkpoint-dir "$dir" \
      --checkpoint-mirror s3://bench/restore --nproc-per-node 1 "$@" \
      -- /usr/bin/python3 "$WORK/restore_worker.py"; } 2>&1)
  grep -q "RESTORED 100" <<<"$out" || { echo "restore failed: $out" >&2; exit 1; }
  echo "$(grep -o 'WALL [0-9.]*' <<<"$out" | cut -d' ' -f2) $(grep -o 'load_latest [0-9.]*' <<<"$out" | cut -d' ' -f2)"
}
for r in $(seq 1 "$ROUNDS"); do
  read -r T[pw$r] T[pl$r] <<<"$(restore)"
  read -r T[nw$r] T[nl$r] <<<"$(restore --no-checkpoint-prefetch)"
  printf "restore round %d: prefetch %ss (load_latest %ss) | no prefetch %ss (load_latest %ss)\n" \
    "$r" "${T[pw$r]}" "${T[pl$r]}" "${T[nw$r]}" "${T[nl$r]}"
done
out=()
for r in $(seq 1 "$ROUNDS"); do out+=("$(echo "${T[nw$r]} / ${T[pw$r]}" | bc -l)"); done
printf "restore of %d GiB (start-up +%ss), exec to state loaded: median %.2f s with prefetch, %.2f s without; ratio without/with %.2fx\n" \
  "$GIB" "${RESTORE_STARTUP_S:-0}" "$(median $(for r in $(seq 1 "$ROUNDS"); do echo "${T[pw$r]}"; done))" \
  "$(median $(for r in $(seq 1 "$ROUNDS"); do echo "${T[nw$r]}"; done))" "$(median "${out[@]}")"
fi
