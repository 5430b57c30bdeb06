#!/usr/bin/env bash
# titan gateway's cost, side by side in one run with no proxy and with nginx (Debian's, one
# worker) in front of the same titan serve-sim, all on this machine's cores:
#   1. added latency at 2,000 streamed requests/s (then at 500/s): titan load straight to
#      serve-sim, through titan gateway and through nginx, rounds alternated (direct, gateway,
#      nginx) x 3, the same arrival schedule (same seed) every run; differences are gateway (or
#      nginx) minus direct within a round, then the median over rounds. Before each gateway run
#      the script waits for the gateway to call its replica "ready" again, and it counts the
#      ejections the gateway logs;
#   2. CPU per proxied request and per SSE chunk: each proxy's utime+stime (/proc/PID/stat,
#      all its processes) over the same titan load run, for short answers (1 token: per-request
#      cost), the 16-token runs of 1., and long streams (256 tokens at a lower rate: per-chunk
#      cost); chunks = ok requests x (output tokens + 1 for "data: [DONE]"), serve-sim's framing;
#   3. concurrent streams: a burst of 10,000 streamed requests against a slow serve-sim (every
#      stream stays open ~30 s), first straight to it (reference TTFT), then through a fresh
#      gateway: the gateway's VmHWM over its idle VmRSS, divided by the most streams open at once
#      (from titan load's records). The gateway holds 2 descriptors per stream (client + replica),
#      so the burst is cut to what `ulimit -n` allows, and the script says so.
#
#   bash bench/gateway_bench.sh [BUILD_DIR] [SECONDS]      (defaults build/release, 10)
#   GATEWAY_BENCH_KEEP=1 keeps the servers' logs and every JSON in the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
seconds=${2:-10}
titan=$build/tools/titan/titan
py=/usr/bin/python3
work=$(mktemp -d)
cleanup() {
  local f
  for f in "$work"/*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 0.3
  if [ -n "${GATEWAY_BENCH_KEEP:-}" ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
nofile=$(ulimit -n)
hz=$(getconf CLK_TCK)
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), $(uname -r);" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); ulimit -n $nofile; $(nginx -v 2>&1 | sed 's/.*: //')"
echo "date: $(date -u); ${seconds}s per run"

start_titan() {  # VAR NAME ARGS...: start a titan server (a child of this shell), VAR=its URL
  local var=$1 name=$2 u=""; shift 2
  "$titan" "$@" >"$work/$name.out" 2>"$work/$name.err" &
  echo $! >"$work/$name.pid"
  for _ in $(seq 100); do
    u=$(grep -o -m1 'http://127.0.0.1:[0-9]*' "$work/$name.err" 2>/dev/null || true)
    [ -n "$u" ] && break
    sleep 0.1
  done
  [ -n "$u" ] || { echo "$name did not start:" >&2; cat "$work/$name.err" >&2; exit 1; }
  printf -v "$var" '%s' "$u"
}
ticks() {  # PIDS...: utime+stime, all threads, in clock ticks
  local t=0 p
  for p in "$@"; do t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}'))); done
  echo "$t"
}
alive() {  # NAME: stop the run, with the server's last words, if it is gone
  kill -0 "$(cat "$work/$1.pid")" 2>/dev/null && return 0
  local rc=0
  wait "$(cat "$work/$1.pid")" 2>/dev/null || rc=$?
  echo "$1 (pid $(cat "$work/$1.pid")) is gone, exit status $rc; its stderr ends:" >&2
  tail -n 5 "$work/$1.err" >&2
  rm -f "$work/$1.pid"
  exit 1
}
wait_ready() {  # NAME: the gateway's replica is ready (health check and calibration done)
  for _ in $(seq 100); do grep -q ' ready' "$work/$1.err" && return 0; sleep 0.1; done
  echo "$1: replica never ready" >&2; cat "$work/$1.err" >&2; exit 1
}
replica_ready() {  # URL: wait (up to 60 s) until the gateway's replica is "ready"; print the seconds waited
  local t0=$SECONDS
  for _ in $(seq 600); do
    curl -s -m 1 "$1/admin/replicas" | grep -q '"state":"ready"' && break
    sleep 0.1
  done
  echo $((SECONDS - t0))
}
stop_gateway() {  # NAME: SIGTERM, wait for the exit, say how it ended
  local pid rc=0
  pid=$(cat "$work/$1.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 400); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then echo "  $1: still running 40 s after SIGTERM"; return; fi
  wait "$pid" || rc=$?
  rm -f "$work/$1.pid"
  echo "  $1 exit status after SIGTERM: $rc$( [ "$rc" = 0 ] || printf ' (stderr: %s)' "$(tail -n 2 "$work/$1.err" | tr '\n' ' ')")"
}

# One serve-sim for 1. and 2.: 1 ms per decode step whatever the batch, no prefill cost, no
# 429s, so that what changes between runs is only the path in front of it.
start_titan sim sim serve-sim --port 0 --itl-base 1ms --max-num-seqs 4096 --load-factor 0 \
  --prefill-overhead 0 --prefill-per-token 0 --max-waiting 100000
start_titan gw gw gateway --listen 127.0.0.1:0 --replica "$sim" --max-inflight 100000 --max-queue 100000
wait_ready gw
nginx_port=$((20000 + RANDOM % 20000))
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
worker_rlimit_nofile $nofile;
events { worker_connections 16384; }
http {
  access_log off;
  keepalive_requests 1000000;
  upstream sim { server ${sim#http://}; keepalive 64; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      proxy_pass http://sim;
      proxy_buffering off;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
EOF
nginx -c "$work/nginx.conf" -p "$work" 2>"$work/nginx.err" &
for _ in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
sleep 0.3  # the worker
nginx_master=$(cat "$work/nginx.pid")
nginx_pids=("$nginx_master" $(pgrep -P "$nginx_master"))
ngx=http://127.0.0.1:$nginx_port
sim_pid=$(cat "$work/sim.pid")
gw_pid=$(cat "$work/gw.pid")
declare -A url=([direct]=$sim [gateway]=$gw [nginx]=$ngx)
echo "serve-sim $sim; titan gateway $gw (pid $gw_pid); nginx $ngx (pids ${nginx_pids[*]})"

run() {  # SHAPE PATH RATE OUTPUT_TOKENS: one titan load run, one JSON line into runs.jsonl
  local shape=$1 path=$2 rate=$3 out=$4 p0 s0 rc=0 waited=0 ej0
  alive sim
  [ "$path" = gateway ] && waited=$(replica_ready "$gw")
  ej0=$(grep -c 'ejected' "$work/gw.err" || true)
  case $path in
    gateway) p0=$(ticks "$gw_pid") ;;
    nginx) p0=$(ticks "${nginx_pids[@]}") ;;
    *) p0=0 ;;
  esac
  s0=$(ticks "$sim_pid")
  rm -f "$work/r.json"
  "$titan" load --url "${url[$path]}" --rate "$rate" --duration "${seconds}s" --output-tokens "$out" \
    --input-tokens 16 --tokenize off --scrape off -q --json "$work/r.json" >"$work/r.out" 2>&1 || rc=$?
  local p1=0
  case $path in
    gateway) p1=$(($(ticks "$gw_pid") - p0)) ;;
    nginx) p1=$(($(ticks "${nginx_pids[@]}") - p0)) ;;
  esac
  alive sim
  local s1=$(($(ticks "$sim_pid") - s0))
  if [ "$path" = gateway ]; then
    alive gw
    sleep 3  # a health check that timed out during the run is logged up to 2 s after it
  fi
  local ej=$(($(grep -c 'ejected' "$work/gw.err" || true) - ej0))
  "$py" - "$work/r.json" "$shape" "$path" "$rate" "$out" "$p1" "$s1" "$hz" "$rc" "$ej" "$waited" \
    >>"$work/runs.jsonl" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
shape, path, rate, out, proxy, sim, hz, rc, ej, waited = sys.argv[2:]
l = r["latency"]
print(json.dumps({
    "shape": shape, "path": path, "rate": float(rate), "out": int(out), "rc": int(rc),
    "ejections": int(ej), "waited_s": int(waited),
    "proxy_cpu_s": int(proxy) / int(hz), "sim_cpu_s": int(sim) / int(hz),
    "client_cpu_s": r["client"]["cpu_seconds"], "ok": r["requests"]["ok"],
    "failed": r["requests"]["failed"], "errors": r["requests"].get("errors", {}),
    "valid": r["valid"], "achieved": r["achieved_rate"], "elapsed": r["elapsed_s"],
    "lag_p99_us": l["schedule_lag"]["p99_ms"] * 1000,
    **{f"{m}_{q}": l[m][f"{q}_ms"] * 1000 for m in ("ttft", "e2e") for q in ("p50", "p99")}}))
EOF
  "$py" - "$work/runs.jsonl" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
print(f"  {r['shape']:>5} {r['path']:>7} {r['rate']:>5.0f}/s x {r['out']:>3} tok: ok {r['ok']:>6} failed {r['failed']:>4}"
      f"  ttft p50/p99 {r['ttft_p50']:>7.0f}/{r['ttft_p99']:>8.0f} us  e2e p50/p99 {r['e2e_p50']:>7.0f}/{r['e2e_p99']:>8.0f} us"
      f"  lag p99 {r['lag_p99_us']:>6.0f} us  proxy {r['proxy_cpu_s']:5.2f} s  sim {r['sim_cpu_s']:5.2f} s"
      f"  client {r['client_cpu_s']:5.2f} s" + ("" if r["valid"] else "  (invalid: client lag)")
      + (f"  errors {r['errors']}" if r["errors"] else "")
      + (f"  replica ejected {r['ejections']}x by the gateway" if r["ejections"] else "")
      + (f"  (waited {r['waited_s']} s for the replica to be ready again first)" if r["waited_s"] else ""))
EOF
}

echo
echo "== warm-up (not counted): 2 s at 2,000/s on each path"
for path in direct gateway nginx; do
  "$titan" load --url "${url[$path]}" --rate 2000 --duration 2s --output-tokens 16 --input-tokens 16 \
    --tokenize off --scrape off -q >/dev/null 2>&1 || true
done

echo
echo "== 1. latency at 2,000 streamed requests/s (16 in, 16 out), rounds of direct / gateway / nginx;"
echo "   then the same at 500/s, where no process on the machine is short of CPU"
for rate in 2000 500; do
  for round in 1 2 3; do
    for path in direct gateway nginx; do run "lat$rate" "$path" "$rate" 16; done
  done
done

echo
echo "== 2. proxy CPU: short answers (2,000/s x 1 token) and long streams (100/s x 256 tokens), alternated"
for round in 1 2; do
  for path in gateway nginx; do run short "$path" 2000 1; done
done
for round in 1 2; do
  for path in gateway nginx; do run long "$path" 100 256; done
done
echo "  gateway warnings in 1. and 2. (count, message):"
grep ' W ' "$work/gw.err" | sed -e 's/^[^ ]* W //' -e 's/ ([0-9]* similar lines suppressed)//' -e 's/for [0-9]*s/for Ns/' \
  | sort | uniq -c | sed 's/^/  /' || echo "    none"
stop_gateway gw

echo
want=10000
streams=$want
fit=$(((nofile - 200) / 2 / 100 * 100))
if [ "$fit" -lt "$want" ]; then
  streams=$fit
  echo "== 3. concurrent streams: ulimit -n is $nofile (hard limit $(ulimit -Hn)); the gateway needs 2 descriptors"
  echo "   per stream, so $want streams do not fit: the burst is $streams"
else
  echo "== 3. concurrent streams: a burst of $streams"
fi
start_titan sim3 sim3 serve-sim --port 0 --itl-base 500ms --load-factor 0 --prefill-overhead 0 \
  --prefill-per-token 0 --max-num-seqs 20000 --max-waiting 100000 --max-num-batched-tokens 1000000 \
  --kv-capacity-tokens 100000000 --prefix-cache-blocks 0 --max-connections 30000
"$titan" load --url "$sim3" --arrivals "burst:quiet=500ms,size=$streams" --duration 1s --output-tokens 60 \
  --input-tokens 16 --tokenize off --scrape off -q --json "$work/bd.json" --timeout 3m >"$work/bd.out" 2>&1 || true
"$py" - "$work/bd.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
l = r["latency"]
print(f"  the same burst straight to serve-sim (for reference): ok {r['requests']['ok']}, failed {r['requests']['failed']}; "
      f"TTFT p50 {l['ttft']['p50_ms']:.0f} ms, p99 {l['ttft']['p99_ms']:.0f} ms; E2E p50 {l['e2e']['p50_ms'] / 1000:.1f} s")
EOF
start_titan gw3 gw3 gateway --listen 127.0.0.1:0 --replica "$sim3" --max-inflight 100000 --max-queue 100000
wait_ready gw3
gw3_pid=$(cat "$work/gw3.pid")
rss_idle=$(awk '/^VmRSS/ {print $2}' "/proc/$gw3_pid/status")
(
  while kill -0 "$gw3_pid" 2>/dev/null; do
    echo "$(awk '/^VmRSS/ {print $2}' "/proc/$gw3_pid/status") $(ls "/proc/$gw3_pid/fd" | wc -l)" \
      "$(curl -s -m 1 "$gw3/metrics" | awk '/^titan_gateway_inflight\{/ {print $2}')"
    sleep 0.5
  done
) >"$work/poll.txt" 2>/dev/null &
echo $! >"$work/poll.pid"
rc3=0
"$titan" load --url "$gw3" --arrivals "burst:quiet=500ms,size=$streams" --duration 1s --output-tokens 60 \
  --input-tokens 16 --tokenize off --scrape off -q --json "$work/b.json" --records "$work/b.jsonl" \
  --timeout 3m >"$work/b.out" 2>&1 || rc3=$?
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$gw3_pid/status")
kill "$(cat "$work/poll.pid")" 2>/dev/null || true
rm -f "$work/poll.pid"
"$py" - "$work/b.json" "$work/b.jsonl" "$work/poll.txt" "$rss_idle" "$hwm" "$streams" "$rc3" >"$work/streams.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
events_open, events_streaming = [], []
for line in open(sys.argv[2]):
    x = json.loads(line)
    if x["sent_ms"] < 0:
        continue
    end = x["end_ms"] if x["end_ms"] >= 0 else float("inf")
    events_open += [(x["sent_ms"], 1), (end, -1)]
    if x["status"] == 200 and x["first_token_ms"] >= 0:
        events_streaming += [(x["first_token_ms"], 1), (end, -1)]
def peak(ev):
    n = best = 0
    for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
        n += d
        best = max(best, n)
    return best
poll = [l.split() for l in open(sys.argv[3])]
inflight = [int(float(p[2])) for p in poll if len(p) > 2]
fds = [int(p[1]) for p in poll if len(p) > 1]
print(json.dumps({
    "burst": int(sys.argv[6]), "rc": int(sys.argv[7]), "ok": r["requests"]["ok"],
    "failed": r["requests"]["failed"], "errors": r["requests"].get("errors", {}),
    "peak_open": peak(events_open), "peak_streaming": peak(events_streaming),
    "peak_inflight_metric": max(inflight, default=0), "metric_polls": len(poll),
    "metric_unanswered": sum(1 for p in poll if len(p) < 3), "peak_fds": max(fds, default=0),
    "rss_idle_kb": int(sys.argv[4]), "hwm_kb": int(sys.argv[5]),
    "ttft_p50_ms": r["latency"]["ttft"]["p50_ms"], "ttft_p99_ms": r["latency"]["ttft"]["p99_ms"],
    "e2e_p50_s": r["latency"]["e2e"]["p50_ms"] / 1000, "elapsed_s": r["elapsed_s"]}))
EOF
"$py" - "$work/streams.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
per = (s["hwm_kb"] - s["rss_idle_kb"]) * 1024 / max(s["peak_streaming"], 1)
print(f"  burst {s['burst']}: ok {s['ok']}, failed {s['failed']} {s['errors'] or ''}; most open at once: "
      f"{s['peak_open']} (client side), {s['peak_streaming']} streaming (first token seen, not ended), "
      f"gateway inflight gauge max {s['peak_inflight_metric']} ({s['metric_unanswered']} of {s['metric_polls']} "
      f"/metrics polls unanswered within 1 s); gateway fds max {s['peak_fds']}")
print(f"  through the gateway: TTFT p50 {s['ttft_p50_ms']:.0f} ms, p99 {s['ttft_p99_ms']:.0f} ms; E2E p50 {s['e2e_p50_s']:.1f} s; run {s['elapsed_s']:.1f} s")
print(f"  gateway VmRSS idle {s['rss_idle_kb']/1024:.1f} MiB, VmHWM {s['hwm_kb']/1024:.1f} MiB: "
      f"{per/1024:.1f} KiB per stream; x 10,000 = {(s['rss_idle_kb']*1024 + per*10000)/2**20:.0f} MiB")
EOF
stop_gateway gw3

echo
echo "== summary"
"$py" - "$work/runs.jsonl" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print("added latency, streamed, 16 tokens in and out (us; median of each path over 3 rounds; differences")
print("within a round, then their median):")
print("| rate | metric | direct | gateway | nginx | gateway - direct, per round | gateway - direct | nginx - direct | target |")
print("|---:|---|---:|---:|---:|---|---:|---:|---|")
for rate in (2000, 500):
    lat = [r for r in runs if r["shape"] == f"lat{rate}"]
    d, g, n = ([r for r in lat if r["path"] == p] for p in ("direct", "gateway", "nginx"))
    for m, target in (("ttft_p50", "<= 50"), ("ttft_p99", "<= 500"), ("e2e_p50", "<= 50"), ("e2e_p99", "<= 500")):
        dg = [b[m] - a[m] for a, b in zip(d, g)]
        dn = [b[m] - a[m] for a, b in zip(d, n)]
        med = lambda rs: statistics.median(r[m] for r in rs)
        print(f"| {rate:,}/s | {m.replace('_', ' ')} | {med(d):.0f} | {med(g):.0f} | {med(n):.0f} | "
              f"{', '.join(f'{x:+.0f}' for x in dg)} | **{statistics.median(dg):+.0f}** | {statistics.median(dn):+.0f} | {target} |")
for r in runs:
    if r["failed"] or not r["valid"] or r["rc"] not in (0, 4):
        print(f"  note: {r['shape']} {r['path']}: failed {r['failed']} {r['errors'] or ''}, valid {r['valid']} "
              f"(schedule lag p99 {r['lag_p99_us']:.0f} us), titan load exit {r['rc']}"
              + (f", replica ejected {r['ejections']}x" if r["ejections"] else ""))
print()
print("proxy CPU (utime+stime over the same titan load runs; chunks = ok x (tokens + 1)):")
print("| shape | proxy | requests | chunks | CPU s | core | us / request | us / chunk | titan / nginx |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for shape, label in (("short", "2,000/s x 1 token"), ("lat500", "500/s x 16 tokens"), ("lat2000", "2,000/s x 16 tokens"),
                     ("long", "100/s x 256 tokens")):
    cost = {}
    for path in ("gateway", "nginx"):
        rs = [r for r in runs if r["shape"] == shape and r["path"] == path]
        req = sum(r["ok"] for r in rs)
        chunks = sum(r["ok"] * (r["out"] + 1) for r in rs)
        cpu = sum(r["proxy_cpu_s"] for r in rs)
        wall = sum(r["elapsed"] for r in rs)
        cost[path] = (cpu / max(req, 1) * 1e6, cpu / max(chunks, 1) * 1e6)
        ratio = f"**{cost['gateway'][0] / cost['nginx'][0]:.2f}**" if path == "nginx" and cost["nginx"][0] else ""
        print(f"| {label} | {'titan gateway' if path == 'gateway' else 'nginx'} | {req} | {chunks} | {cpu:.2f} | "
              f"{cpu / wall:.2f} | {cost[path][0]:.1f} | {cost[path][1]:.2f} | {ratio} |")
EOF
