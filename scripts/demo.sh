#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs the end-to-end demo:
# `titan demo` (a real PyTorch DDP job as 2 nodes x 2 workers under `titan run`, coordinated
# through a real etcd, with a straggler, a crash and a hang injected and recovered from titan
# checkpoints) with `titan agent` watching the same step events. About 3 minutes on 2 cores.
#   bash scripts/demo.sh [titan demo options]     (e.g. --steps 240; see titan demo --help)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/build.sh release
titan=build/release/tools/titan/titan
log=$(mktemp /tmp/titan-demo-XXXXXX.log)
"$titan" demo --with-agent "$@" | tee "$log"
out=$(sed -n 's/^ *output directory: //p' "$log" | head -1)
if [ -n "$out" ] && [ -f "$out/agent.log" ]; then
  echo
  echo "titan agent watched the same job; the transients it explained (of $(grep -c ' transient: ' "$out/agent.log") in $out/agent.log):"
  # sed -n, not head: head would close the pipe early, and pipefail would end the script (141)
  grep ' transient: ' "$out/agent.log" | grep -v periodic | sed 's/^.* transient: /  /' | cut -c1-220 | sed -n '1,6p'
fi
echo
echo "The agent alone, with its live view: bash examples/agent_demo.sh"
report=$(sed -n 's/^ *report: \(.*report\.html\) .*/\1/p' "$log" | head -1)
if [ -n "$report" ]; then
  echo
  echo "The whole run on one page (open it in a browser): $report"
fi
