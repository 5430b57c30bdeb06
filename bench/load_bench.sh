#!/usr/bin/env bash
# titan load's generator capacity, side by side in one run with what a user would pick:
#   - wrk (closed loop, no per-request records) on the same non-streaming endpoint,
#   - an open-loop asyncio + aiohttp client written like vLLM's benchmark core
#     (bench/aiohttp_open_loop.py),
# against a no-op endpoint (nginx answering a fixed OpenAI-shaped body, so the server is not
# what is measured), plus SSE chunks/s on a streamed no-op answer and serve-sim's tokens/s.
#
#   bash bench/load_bench.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
seconds=${2:-10}
titan=$build/tools/titan/titan
work=$(mktemp -d)
trap 'kill $(cat "$work"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT

port=$((20000 + RANDOM % 20000))
sse_port=$((port + 1))
body='{"id":"x","object":"text_completion","choices":[{"index":0,"text":" hi","finish_reason":"length"}],"usage":{"prompt_tokens":8,"completion_tokens":1,"total_tokens":9}}'
sse=$(python3 -c '
import json
chunk = json.dumps({"choices": [{"text": " t"}]}, separators=(",", ":"))  # nginx: 4 KiB per string
print("".join("data: %s\\n\\n" % chunk for _ in range(100)) + "data: [DONE]\\n\\n", end="")')
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port;
    location / { default_type application/json; return 200 '$body'; }
  }
  server {
    listen 127.0.0.1:$sse_port;
    location / { default_type text/event-stream; return 200 '$sse'; }
  }
}
EOF
nginx -c "$work/nginx.conf" -p "$work" &
sleep 0.5
url=http://127.0.0.1:$port
echo "machine: $(nproc) cores, $(uname -r); nginx no-op endpoint on $url; ${seconds}s per run"

cat >"$work/post.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"model":"m","prompt":"hello world","max_tokens":1}'
wrk.headers["Content-Type"] = "application/json"
EOF
echo
echo "== wrk, closed loop, 1 thread, 64 connections (no records, no latency per request)"
wrk -t1 -c64 -d"${seconds}s" -s "$work/post.lua" "$url/v1/completions" | grep -E "Requests/sec|Latency"

run_titan() {  # rate extra-args...
  local rate=$1; shift
  "$titan" load --url "$url" --no-stream --arrivals "constant:rate=$rate" --duration "${seconds}s" \
    --tokenize off --scrape off -q --json "$work/t.json" "$@" >/dev/null || true
  python3 - "$work/t.json" "$rate" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
lag = r["latency"]["schedule_lag"]
print(f"  titan load open loop {float(sys.argv[2]):>8.0f}/s planned: achieved {r['achieved_rate']:>8.0f}/s, "
      f"ok {r['requests']['ok']}, lag p99 {lag['p99_ms']*1000:.0f} us, valid {r['valid']}, "
      f"client CPU {r['client']['cpu_seconds']:.1f} s")
EOF
}
echo
echo "== titan load, open loop, every request recorded"
for rate in 2000 20000 30000; do run_titan "$rate"; done

echo
echo "== asyncio + aiohttp open-loop client (vLLM benchmark style)"
for rate in 500 1000 2000; do
  /usr/bin/python3 bench/aiohttp_open_loop.py "$url/v1/completions" "$rate" "$seconds"
done

echo
echo "== SSE: titan load on a streamed no-op answer of 100 chunks"
"$titan" load --url "http://127.0.0.1:$sse_port" --arrivals constant:rate=2500 \
  --duration "${seconds}s" --tokenize off --scrape off -q --json "$work/s.json" >/dev/null || true
python3 - "$work/s.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ok = r["requests"]["ok"]
chunks = r["tokens"]["output"]
print(f"  {ok} streams, {chunks} content chunks in {r['elapsed_s']:.1f} s = {chunks / r['elapsed_s']:.0f} chunks/s; "
      f"lag p99 {r['latency']['schedule_lag']['p99_ms']*1000:.0f} us; valid {r['valid']}")
EOF

echo
echo "== serve-sim streamed tokens/s (256 closed-loop users, 1 ms decode steps)"
sim_port=$((port + 2))
"$titan" serve-sim --port "$sim_port" --max-num-seqs 256 --itl-base 1ms --load-factor 0 \
  --prefill-overhead 0 --prefill-per-token 0 2>/dev/null &
echo $! >"$work/sim.pid"
sleep 1
"$titan" load --url "http://127.0.0.1:$sim_port" --users 256 --duration "${seconds}s" \
  --output-tokens 256 --tokenize off --scrape off -q --json "$work/m.json" >/dev/null || true
python3 - "$work/m.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"  {r['tokens']['output_per_s']:.0f} streamed tokens/s (server and client share the 2 cores)")
EOF
