#!/usr/bin/env python3
"""A replica transient in front of four front ends, side by side in one run: the fault matrix
of titan gateway's issue 33.

Three `titan serve-sim` replicas (--max-num-seqs 8, 10 ms decode steps) take streamed requests
(64 prompt tokens, 32 output tokens) from `titan load` (Poisson arrivals) through one of:
  nginx_rr        nginx 1.22, round robin (its default), proxy_buffering off, keep-alive;
  nginx_best      the best nginx: least_conn; max_fails=1 fail_timeout=3s;
                  proxy_next_upstream error timeout; proxy_read_timeout 500ms;
  gateway_before  titan gateway as it was before stall detection and hedging (--before BINARY:
                  a titan built from an older commit), defaults (p2c);
  gateway         titan gateway now, defaults (p2c).
Both gateways get --ttft-slo 500ms. Five seconds into each run, one replica (the same one
every time) has a fault, sent through serve-sim's POST /admin/fault:
  stall1s, stall3s, stall10s   the engine freezes (a GPU hang): streams pause, health stays 200;
  slow3x                       every step costs 3x from then on;
  crash                        the process kills itself (SIGKILL); the script restarts it on the
                               same port 3 s later;
  issue                        the issue's own case: stalls of 3 s at 6 s and at 16 s.
Offered load is a fraction of the three replicas' capacity, measured first (closed loop, one
user per seat: 24 for serve-sim, 12 for llama-server; through nginx round robin; --capacity R
skips it).

Per cell: TTFT p50/p99 and E2E p99 of the answered requests, goodput at a 500 ms TTFT SLO (the
fraction of planned requests answered with TTFT <= 500 ms: a 429, 503 or error is a miss), the
hedged share (hedges / admitted) and extra prompt tokens (hedge prompt tokens / offered prompt
tokens) from the gateway's /metrics, and the stall detection delay: from the fault (the time
the script sent it) to the gateway's `stall` event for that replica. Every latency counts from
the planned send time (titan load), so no front end hides a wait. Each cell runs --repeats
times with the front ends in turn (A B C D A B C D ...); the table gives the median and the
min-max spread.

  /usr/bin/python3 bench/gateway_faults.py --titan build/release/tools/titan/titan \
      --before /tmp/titan-before [--repeats 3] [--duration 20] [--faults ...] [--loads ...]
  /usr/bin/python3 bench/gateway_faults.py --llama --faults sigstop3s --loads 0.8
      (llama-server replicas, --parallel 4, one stopped with SIGSTOP for 3 s at 6 s and 16 s;
      needs LLAMA_SERVER and TITAN_LLAMA_MODEL: eval "$(bash scripts/llama_server.sh)")
"""
import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SLO_MS = 500.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url, body=None, timeout=5):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def wait_http(url, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout}s")


class Proc:
    """A child process in its own process group, killed at close."""

    def __init__(self, args, log_path, **kw):
        self.log = open(log_path, "ab")
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                  start_new_session=True, **kw)

    def close(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        self.log.close()


class SimReplica:
    def __init__(self, titan, port, work, name):
        self.titan, self.port, self.work, self.name = titan, port, work, name
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None
        self.start()

    def start(self):
        self.proc = Proc([self.titan, "serve-sim", "--port", str(self.port), "--max-num-seqs", "8",
                          "--itl-base", "10ms", "--max-waiting", "100000"],
                         os.path.join(self.work, f"{self.name}.log"))
        wait_http(self.url + "/health", 30)

    def fault(self, body):
        http_json(self.url + "/admin/fault", body)

    def close(self):
        if self.proc:
            self.proc.close()


class LlamaReplica:
    """llama.cpp's llama-server with the test model (--parallel 4), as in the issue's run."""

    def __init__(self, port, work, name):
        self.port, self.name = port, name
        self.url = f"http://127.0.0.1:{port}"
        self.proc = Proc([os.environ["LLAMA_SERVER"], "-m", os.environ["TITAN_LLAMA_MODEL"],
                          "--host", "127.0.0.1", "--port", str(port), "--parallel", "4", "-c",
                          "4096", "--threads", "1", "--metrics", "--no-webui"],
                         os.path.join(work, f"{name}.log"))
        wait_http(self.url + "/health", 120)

    def fault(self, body):
        stop = body["sigstop"]
        os.kill(self.proc.p.pid, signal.SIGSTOP)
        time.sleep(stop)
        os.kill(self.proc.p.pid, signal.SIGCONT)

    def close(self):
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.p.pid, signal.SIGCONT)
        self.proc.close()


NGINX_CONF = """worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;
events {{ worker_connections 16384; }}
http {{
  access_log off;
  upstream replicas {{ {balance} {servers} keepalive 64; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://replicas;
      proxy_buffering off;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      {extra}
    }}
  }}
}}
"""


class Front:
    """One front end in front of the replicas; .url, .close(), .events() (gateway only)."""

    def __init__(self, kind, replicas, work, titan, before):
        self.kind, self.work = kind, work
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.events_path = os.path.join(work, f"{kind}-events.jsonl")
        if os.path.exists(self.events_path):
            os.unlink(self.events_path)
        if kind.startswith("nginx"):
            best = kind == "nginx_best"
            servers = " ".join(f"server {r.url[7:]}{' max_fails=1 fail_timeout=3s' if best else ''};"
                               for r in replicas)
            conf = NGINX_CONF.format(
                work=work, port=port, servers=servers, balance="least_conn;" if best else "",
                extra=("proxy_next_upstream error timeout; proxy_read_timeout 500ms;"
                       if best else ""))
            path = os.path.join(work, f"{kind}.conf")
            with open(path, "w") as f:
                f.write(conf)
            self.proc = Proc(["nginx", "-c", path, "-p", work], os.path.join(work, f"{kind}.log"))
            wait_http(self.url + "/health", 10)
        else:
            binary = before if kind == "gateway_before" else titan
            args = [binary, "gateway", "--listen", f"127.0.0.1:{port}", "--ttft-slo", "500ms",
                    "--event-log", self.events_path, "--health-interval", "200ms"]
            for r in replicas:
                args += ["--replica", r.url]
            self.proc = Proc(args, os.path.join(work, f"{kind}.log"))
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    reps = json.loads(http_json(self.url + "/admin/replicas"))["replicas"]
                    if all(r["state"] == "ready" for r in reps):
                        break
                except Exception:  # noqa: BLE001 - not up yet
                    pass
                time.sleep(0.1)
            else:
                raise RuntimeError(f"{kind}: replicas not ready")

    def metrics(self):
        if self.kind.startswith("nginx"):
            return {}
        text = http_json(self.url + "/metrics").decode()
        out = {}
        for line in text.splitlines():
            m = re.match(r"^(titan_gateway_[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$", line)
            if m:
                out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        return out

    def events(self):
        try:
            with open(self.events_path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def close(self):
        self.proc.close(signal.SIGTERM)


def run_load(titan, url, rate, duration, seed, work, tag, in_tokens=64, out_tokens=32):
    recs = os.path.join(work, f"{tag}.jsonl")
    subprocess.run([titan, "load", "--url", url, "--arrivals", f"poisson:rate={rate}",
                    "--duration", f"{duration}s", "--input-tokens", str(in_tokens),
                    "--output-tokens", str(out_tokens), "--seed", str(seed), "--timeout", "60s",
                    "--drain", "60s", "--lag-bound", "50ms", "--records", recs, "-q"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(recs) as f:
        return [json.loads(line) for line in f if line.strip()]


def quantile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def summarise(records):
    ok = [r for r in records if r["status"] == 200 and r["error"] in ("", "none") and r["ttft_ms"] >= 0]
    ttft = [r["ttft_ms"] for r in ok]
    e2e = [r["e2e_ms"] for r in ok]
    good = sum(1 for r in ok if r["ttft_ms"] <= SLO_MS)
    return {"ttft_p50": quantile(ttft, 0.5), "ttft_p99": quantile(ttft, 0.99),
            "e2e_p99": quantile(e2e, 0.99), "goodput": good / max(1, len(records)),
            "le100": sum(1 for t in ttft if t <= 100) / max(1, len(records)),
            "planned": len(records), "ok": len(ok)}


FAULTS = {
    "stall1s": [(5.0, {"stall": "1s"})],
    "stall3s": [(5.0, {"stall": "3s"})],
    "stall10s": [(5.0, {"stall": "10s"})],
    "slow3x": [(5.0, {"slow": 3})],
    "crash": [(5.0, {"crash": True})],
    "issue": [(6.0, {"stall": "3s"}), (16.0, {"stall": "3s"})],
    "sigstop3s": [(6.0, {"sigstop": 3.0}), (16.0, {"sigstop": 3.0})],
    "none": [],
}


def inject(replicas, victim, plan, t0, sent, titan):
    for at, body in plan:
        delay = t0 + at - time.time()
        if delay > 0:
            time.sleep(delay)
        sent.append(time.time())
        try:
            replicas[victim].fault(body)
        except Exception:  # noqa: BLE001 - a crash answers nothing
            pass
        if body.get("crash"):
            time.sleep(3)
            replicas[victim].proc.close()
            replicas[victim].start()


def stall_delays(events, victim_url, sent):
    delays = []
    for s in sent:
        for e in events:
            if e.get("type") == "stall" and e.get("replica") == victim_url and \
                    e["time_ns"] / 1e9 >= s - 0.05:
                delays.append(e["time_ns"] / 1e9 - s)
                break
    return delays


def cell(args, fault, load, repeat, fronts, capacity, work):
    rate = round(load * capacity, 1)
    results = {}
    for kind in fronts:
        if args.llama:
            replicas = [LlamaReplica(free_port(), work, f"llama{i}") for i in range(3)]
        else:
            replicas = [SimReplica(args.titan, free_port(), work, f"sim{i}") for i in range(3)]
        front = Front(kind, replicas, work, args.titan, args.before)
        m0 = front.metrics()
        sent = []
        t0 = time.time() + 0.3
        injector = threading.Thread(target=inject, args=(replicas, 2, FAULTS[fault], t0, sent,
                                                         args.titan))
        injector.start()
        time.sleep(max(0, t0 - time.time()))
        records = run_load(args.titan, front.url, rate,
                           25 if fault in ("issue", "sigstop3s") else args.duration, 1000 + repeat,
                           work,
                           f"{kind}-{fault}-{load}-{repeat}")
        injector.join()
        m1 = front.metrics()
        s = summarise(records)
        d = lambda k: m1.get(k, 0) - m0.get(k, 0)  # noqa: E731
        hedges = sum(v for k, v in m1.items() if k.startswith("titan_gateway_hedges_total")) - \
            sum(v for k, v in m0.items() if k.startswith("titan_gateway_hedges_total"))
        admitted = sum(v for k, v in m1.items() if k.startswith("titan_gateway_requests_total"))
        s["hedged"] = hedges / admitted if admitted else float("nan")
        offered = d("titan_gateway_prompt_tokens_total")
        s["extra_tokens"] = (d("titan_gateway_hedge_prompt_tokens_total") / offered
                             if offered else float("nan"))
        s["detect"] = stall_delays(front.events(), replicas[2].url, sent) \
            if fault.startswith("stall") or fault in ("issue", "sigstop3s") else []
        front.close()
        for r in replicas:
            r.close()
        results[kind] = s
        print(f"  {fault:8s} load {load:.2f} ({rate}/s) #{repeat} {kind:15s} ttft p50 "
              f"{s['ttft_p50']:7.1f} p99 {s['ttft_p99']:7.1f} e2e p99 {s['e2e_p99']:7.1f} "
              f"goodput {s['goodput']:.3f} hedged {s['hedged']:.3f} "
              f"extra {s['extra_tokens']:.3f} detect {[round(x * 1e3) for x in s['detect']]}",
              flush=True)
    return results


def measure_capacity(args, work):
    seats = 12 if args.llama else 24
    replicas = [LlamaReplica(free_port(), work, f"cap{i}") if args.llama
                else SimReplica(args.titan, free_port(), work, f"cap{i}") for i in range(3)]
    front = Front("nginx_rr", replicas, work, args.titan, args.before)
    recs = os.path.join(work, "capacity.jsonl")
    subprocess.run([args.titan, "load", "--url", front.url, "--users", str(seats), "--duration", "10s",
                    "--input-tokens", "64", "--output-tokens", "32", "--records", recs, "-q"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(recs) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    ends = sorted(r["end_ms"] for r in rows if r["status"] == 200)
    front.close()
    for r in replicas:
        r.close()
    # Throughput over the middle of the run (the ramp and the drain left out).
    mid = [e for e in ends if 2000 <= e <= 9000]
    return len(mid) / 7.0


def fmt_spread(values, f="{:.0f}"):
    values = [v for v in values if v == v]
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1 or min(values) == max(values):
        return f.format(med)
    return f"{f.format(med)} ({f.format(min(values))}-{f.format(max(values))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--titan", default="build/release/tools/titan/titan")
    ap.add_argument("--before", default="", help="titan binary from before this issue")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--faults", default="stall1s,stall3s,stall10s,slow3x,crash")
    ap.add_argument("--loads", default="0.5,0.8,0.95")
    ap.add_argument("--fronts", default="nginx_rr,nginx_best,gateway_before,gateway")
    ap.add_argument("--capacity", type=float, default=0, help="requests/s of the 3 replicas")
    ap.add_argument("--json", default="", help="write every cell's numbers here")
    ap.add_argument("--llama", action="store_true",
                    help="llama-server replicas (LLAMA_SERVER, TITAN_LLAMA_MODEL) instead of "
                         "serve-sim; use with --faults sigstop3s")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (each front end's last event log and log)")
    args = ap.parse_args()
    fronts = [f for f in args.fronts.split(",") if f != "gateway_before" or args.before]
    work = tempfile.mkdtemp(prefix="gwfaults-")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()}; "
          f"{subprocess.run(['nginx', '-v'], capture_output=True, text=True).stderr.strip()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; work {work}")
    capacity = args.capacity or measure_capacity(args, work)
    print(f"capacity of 3 {'llama-server replicas (64 in, 32 out, 4 slots' if args.llama else 'serve-sim replicas (64 in, 32 out, 8 seqs'} each): {capacity:.1f} req/s",
          flush=True)
    table = []
    for fault in args.faults.split(","):
        for load in [float(x) for x in args.loads.split(",")]:
            runs = [cell(args, fault, load, k, fronts, capacity, work)
                    for k in range(args.repeats)]
            for kind in fronts:
                rs = [r[kind] for r in runs]
                table.append({"fault": fault, "load": load, "front": kind, "runs": rs})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"capacity": capacity, "cells": table}, f, indent=1)
    print("\n| fault | load | front end | TTFT p50 ms | TTFT p99 ms | E2E p99 ms | goodput@500ms |"
          " hedged | extra prompt tokens | stall detected after (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in table:
        rs = row["runs"]
        g = lambda k, f="{:.0f}": fmt_spread([r[k] for r in rs], f)  # noqa: E731
        det = [x * 1e3 for r in rs for x in r["detect"]]
        print(f"| {row['fault']} | {row['load']:.0%} | {row['front']} | {g('ttft_p50')} | "
              f"{g('ttft_p99')} | {g('e2e_p99')} | {g('goodput', '{:.3f}')} | "
              f"{g('hedged', '{:.3f}') if row['front'].startswith('gateway') else '-'} | "
              f"{g('extra_tokens', '{:.3f}') if row['front'] == 'gateway' else '-'} | "
              f"{fmt_spread(det) if det else '-'} |")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
