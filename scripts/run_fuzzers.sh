#!/usr/bin/env bash
# Runs every fuzzer in BUILD_DIR for SECONDS each, starting from its seed corpus when one exists
# (fuzz/corpus/<name>/ next to the fuzzer source is copied to a scratch dir; nothing is written
# into the tree). Fails on the first crash, leak or timeout.
set -euo pipefail
build=${1:?build dir}
seconds=${2:-20}
cd "$(dirname "$0")/.."
mapfile -t fuzzers < <(find "$build" -maxdepth 4 -type f -name '*_fuzzer' -perm -u+x | sort)
if [ ${#fuzzers[@]} -eq 0 ]; then echo "no fuzzers built in $build"; exit 1; fi
passed=0
for f in "${fuzzers[@]}"; do
  name=$(basename "$f")
  scratch=$(mktemp -d)
  seed=$(find src test -type d -path "*corpus/${name}" | head -1)
  [ -n "$seed" ] && cp -r "$seed"/. "$scratch"/
  echo "fuzz: $name for ${seconds}s"
  "$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=0 "$scratch" >"$scratch.log" 2>&1 || { tail -50 "$scratch.log"; exit 1; }
  grep -E '^#[0-9]+.*DONE' "$scratch.log" | tail -1 || true
  rm -rf "$scratch" "$scratch.log"
  passed=$((passed+1))
done
echo "fuzz: $passed passed, 0 failed"
