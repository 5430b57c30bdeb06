#!/usr/bin/env bash
# The agent on its own: starts `titan agent` with its live view, runs a small real PyTorch
# training loop instrumented with titan.client next to it, injects a slow step, a checkpoint
# and a CPU burst, then prints the transients the agent explained and where its Perfetto dump is.
#   examples/agent_demo.sh [build dir=build/release] [seconds=40]
set -euo pipefail
build=${1:-build/release}
seconds=${2:-40}
titan=$build/tools/titan/titan
out=$(mktemp -d /tmp/titan-agent-demo-XXXXXX)
sock=$out/agent.sock

"$titan" agent --port 0 --socket "$sock" --live --run-for "$seconds" --dump-dir "$out" \
    --log-level warning >"$out/live.txt" 2>"$out/agent.log" &
agent=$!
trap 'kill $agent 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "listening on" "$out/live.txt" 2>/dev/null && break; sleep 0.1; done
port=$(grep -o '127.0.0.1:[0-9]*' "$out/live.txt" | head -1 | cut -d: -f2)
echo "titan agent on http://127.0.0.1:$port (live view: $out/live.txt)"

TITAN_AGENT_SOCKET=$sock PYTHONPATH=$build/python /usr/bin/python3 - <<'PY' &
import time, torch
import titan.client as tc
tc.init(rank=0, job="agent-demo")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(512, 256), torch.randn(512, 1)
t0 = time.time()
step = 0
while time.time() - t0 < 25:
    with tc.step(step):
        opt.zero_grad(); torch.nn.functional.mse_loss(model(x), y).backward(); opt.step()
        time.sleep(0.02)
        if step == 150:
            time.sleep(0.5)                      # a slow step: a late data batch, say
    if step % 100 == 99:
        tc.checkpoint_begin(step)
        torch.save(model.state_dict(), "/tmp/titan-agent-demo.pt")
        time.sleep(0.2)
        tc.checkpoint_end(step, 1 << 20)
    step += 1
print(f"training: {step} steps in 25 s")
PY
trainer=$!
sleep 12
echo "injecting a 1 s CPU burst on every core"
for _ in $(seq "$(nproc)"); do timeout 1 sh -c 'while :; do :; done' & done
wait "$trainer"
sleep 3

echo
echo "---- the agent's live view (last frame) ----"
awk 'BEGIN{RS="titan agent  http"} END{print "titan agent  http" $0}' "$out/live.txt" | head -40
echo
echo "---- transients, as the agent explains them ----"
curl -s "http://127.0.0.1:$port/events" | /usr/bin/python3 -c '
import json, sys
for e in json.load(sys.stdin):
    print("#%d: %s" % (e["id"], e["summary"]))'
curl -s "http://127.0.0.1:$port/recorder?last=60s" > "$out/recorder.json"
echo
echo "flight recorder (open in https://ui.perfetto.dev): $out/recorder.json"
echo "per-transient dumps: $(ls "$out"/titan-transient-*.json 2>/dev/null | wc -l) in $out"
wait "$agent" 2>/dev/null || true
