#!/usr/bin/env bash
# Crash-consistency soak: hundreds of kill -9 trials against the checkpoint commit protocol.
#   bash bench/ckpt_soak.sh [BUILD_DIR=build/release] [TRIALS=500] [TORCH_TRIALS=20]
# 1. checkpoint_crash_test: 3 forked writer processes saving in a loop, all killed with SIGKILL
#    at a random moment per trial; latest must load, verify and hold its step's exact content.
# 2. The same with a real 2-rank PyTorch (gloo) job saving asynchronously (slower: a torch
#    start-up per trial).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
trials=${2:-500}
torch_trials=${3:-20}
echo "== $trials kill -9 trials of 3 C++ writer processes"
TITAN_CKPT_CRASH_TRIALS=$trials "$build/src/checkpoint/checkpoint_crash_test"
if [ "$torch_trials" -gt 0 ]; then
  echo "== $torch_trials kill -9 trials of a 2-rank torch job"
  cd test/checkpoint
  TITAN_CKPT_TORCH_KILL_TRIALS=$torch_trials PYTHONPATH="../../$build/python:." \
    /usr/bin/python3 -m unittest -v \
    test_reliability.ReliabilityTest.test_kill_nine_during_async_saves_of_a_torch_job
fi
