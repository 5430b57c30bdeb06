#!/usr/bin/env bash
# The whole test suite, from a fresh Debian bookworm machine: installs what is missing, checks
# formatting, builds, and runs every test (unit, end-to-end with real Prometheus / etcd /
# PyTorch processes), the unit tests again under ASan+UBSan and TSan, and each fuzzer briefly.
#
#   bash scripts/test.sh            everything (what CI runs)
#   TITAN_TEST_QUICK=1 bash scripts/test.sh   release build and tests only
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh

# Each step's header says how long the run has taken so far (CI must stay under an hour).
step() { printf '\n==== %s (at %d s)\n' "$*" "$SECONDS"; }
trap 'printf "\n==== done: %d s in all\n" "$SECONDS"' EXIT

step "clang-format"
bash scripts/check_format.sh

step "llama-server (built once per machine into a cache, about 6 minutes on 2 cores)"
set -a  # LLAMA_SERVER and TITAN_LLAMA_MODEL for the serving tests
eval "$(bash scripts/llama_server.sh)"
set +a

step "release build"
bash scripts/build.sh release
step "release tests"
ctest --test-dir build/release --output-on-failure -j 2 --timeout 600

if [ "${TITAN_TEST_QUICK:-0}" = 1 ]; then exit 0; fi

# Both sanitizer builds use clang: it compiles this code at -O0 about twice as fast as gcc, and
# unity builds (CMakePresets.json) about 2.4x faster again. The ASan build also holds the fuzzers
# (one build with coverage instead of a separate fuzz build).
for preset in asan tsan; do
  step "$preset build (unit tests$([ $preset = asan ] && echo ' and fuzzers'))"
  bash scripts/build.sh "$preset"
  step "$preset unit tests"
  ctest --test-dir "build/$preset" --output-on-failure -j 2 -L unit --timeout 900
done

step "fuzzers (bounded runs)"
bash scripts/run_fuzzers.sh build/asan "${TITAN_FUZZ_SECONDS:-12}"
