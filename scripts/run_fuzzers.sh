#!/usr/bin/env bash
# Runs every fuzzer in BUILD_DIR for SECONDS each, starting from its seed corpus when one exists
# (fuzz/corpus/<name>/ next to the fuzzer source is copied to a scratch dir; nothing is written
# into the tree). Runs JOBS fuzzers at a time (default: the number of cores; each fuzzer is one
# process on one core). Fails on the first crash, leak or timeout, printing its log's tail.
#
#   scripts/run_fuzzers.sh BUILD_DIR [SECONDS] [JOBS]
set -euo pipefail
build=${1:?build dir}
seconds=${2:-20}
jobs=${3:-$(nproc)}
cd "$(dirname "$0")/.."
mapfile -t fuzzers < <(find "$build" -maxdepth 4 -type f -name '*_fuzzer' -perm -u+x | sort)
if [ ${#fuzzers[@]} -eq 0 ]; then echo "no fuzzers built in $build"; exit 1; fi

# One fuzzer: exit 255 on failure so that xargs starts no further fuzzers.
fuzz_one() {
  local f=$1 seconds=$2 name scratch seed
  name=$(basename "$f")
  scratch=$(mktemp -d)
  seed=$(find src test -type d -path "*corpus/${name}" | head -1)
  [ -n "$seed" ] && cp -r "$seed"/. "$scratch"/
  # The wall-clock bound is the fuzzer's own plus a margin: a fuzzer stuck in its crash handler
  # (seen once after an out-of-memory) must not hold CI until its own limit.
  if ! timeout -k 10 $((seconds + 120)) \
       "$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=0 "$scratch" >"$scratch.log" 2>&1; then
    echo "fuzz: $name FAILED"; tail -50 "$scratch.log"; exit 255
  fi
  echo "fuzz: $name for ${seconds}s: $(grep -E '^#[0-9]+.*DONE' "$scratch.log" | tail -1)"
  rm -rf "$scratch" "$scratch.log"
}
export -f fuzz_one
printf '%s\n' "${fuzzers[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$@"' _ {} "$seconds"
echo "fuzz: ${#fuzzers[@]} passed, 0 failed"
