"""End-to-end tests of `titan gateway` with real replicas: `titan serve-sim` processes and
llama.cpp's `llama-server` (built by scripts/llama_server.sh; LLAMA_SERVER and
TITAN_LLAMA_MODEL name it), driven by `titan load`. Under CI (CI=true) a missing llama-server
is a failure, not a skip.

Run: TITAN_BIN=build/release/tools/titan/titan /usr/bin/python3 -m pytest -q test/gateway
"""
import contextlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "load"))
from test_load_e2e import (IN_CI, LLAMA_MODEL, LLAMA_SERVER, TITAN, free_port,  # noqa: E402
                           llama_server, load, serve_sim)

pytestmark = pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                                reason="TITAN_BIN (the titan binary) is not built")


def get_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def replicas(gw):
    return get_json(gw + "/admin/replicas")["replicas"]


def wait_for(check, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 - not there yet
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.contextmanager
def gateway(*args, ready=None, nofile=None):
    """A real `titan gateway` process on an ephemeral port; its event log is read back as
    `events()`. SIGTERM at the end (a drain), then the test checks it exited 0. `nofile`: its
    descriptor limit (RLIMIT_NOFILE), when given."""
    with tempfile.TemporaryDirectory() as d:
        events_path = os.path.join(d, "events.jsonl")
        proc = subprocess.Popen(
            [TITAN, "gateway", "--listen", "127.0.0.1:0", "--event-log", events_path,
             "--health-interval", "200ms", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)))
            if nofile else None)
        try:
            url = None
            while url is None:
                line = proc.stderr.readline()
                if not line:
                    raise AssertionError(f"gateway exited before listening: rc={proc.wait()}")
                m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
                if m:
                    url = m.group(1)
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            want = ready if ready is not None else 1
            wait_for(lambda: sum(r["state"] == "ready" for r in replicas(url)) >= want, 300,
                     "ready replicas")

            def events():
                with open(events_path) as f:
                    return [json.loads(line) for line in f if line.strip()]

            yield url, proc, events
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    raise AssertionError("the gateway did not stop on SIGTERM")
            assert proc.returncode == 0, proc.returncode


def records(url, *args):
    """Runs titan load with --records; returns (summary json, list of per-request records)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "records.jsonl")
        result, stdout, _ = load(url, "--records", path, *args)
        with open(path) as f:
            return result, [json.loads(line) for line in f if line.strip()], stdout


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


# ---------------------------------------------------------------------------------------------
# Bursts: the admitted keep their SLO, the shed get a fast 429


def test_a_10x_burst_is_held_within_the_slo_and_the_excess_is_shed_fast():
    burst = ["--arrivals", "stages:15x3s,150x2s,15x3s", "--duration", "8s",
             "--output-tokens", "20", "--input-tokens", "32", "--timeout", "60s"]
    sim = ["--max-num-seqs", "8", "--itl-base", "10ms", "--max-waiting", "100000"]
    with serve_sim(*sim) as (url, _):
        direct, _, _ = load(url, *burst)
    with serve_sim(*sim) as (url, _):
        with gateway("--replica", url, "--max-inflight", "8", "--max-queue", "8",
                     "--ttft-slo", "1s") as (gw, _, events):
            through, recs, _ = records(gw, *burst)
            shed_events = [e for e in events() if e["type"] == "shed"]
    slo_ms = 1000
    print(f"\nburst: direct p99 TTFT {direct['latency']['ttft']['p99_ms']:.0f} ms, "
          f"through the gateway p99 TTFT of admitted {through['latency']['ttft']['p99_ms']:.0f} ms")
    # Straight to the replica the burst queues in the engine and P99 TTFT explodes.
    assert direct["requests"]["ok"] == direct["requests"]["planned"]
    assert direct["latency"]["ttft"]["p99_ms"] > 3 * slo_ms, direct["latency"]["ttft"]
    # Through the gateway: the admitted keep the SLO, the rest get 429 fast.
    ok = [r for r in recs if r["status"] == 200]
    shed = [r for r in recs if r["status"] == 429]
    assert len(ok) + len(shed) == len(recs), {r["status"] for r in recs}
    assert len(shed) > 0.3 * len(recs), (len(shed), len(recs))
    assert pct([r["ttft_ms"] for r in ok], 99) <= slo_ms, pct([r["ttft_ms"] for r in ok], 99)
    assert pct([r["e2e_ms"] for r in shed], 99) < 100, pct([r["e2e_ms"] for r in shed], 99)
    assert len(shed_events) == len(shed)
    assert {e["reason"] for e in shed_events} <= {"queue_full", "deadline", "queue_timeout"}


# ---------------------------------------------------------------------------------------------
# Ejection of a slow replica


def test_a_slow_replica_is_ejected_within_seconds_and_its_traffic_moves():
    with serve_sim("--itl-base", "2ms") as (a, _), serve_sim("--itl-base", "2ms") as (b, _), \
            serve_sim("--itl-base", "2ms", "--fault", "slow=5@3s") as (slow, _):
        with gateway("--replica", a, "--replica", b, "--replica", slow, "--routing",
                     "round_robin", "--outlier-interval", "500ms", ready=3) as (gw, _, events):
            started = time.time()
            result, recs, _ = records(gw, "--rate", "30", "--duration", "10s",
                                      "--output-tokens", "20", "--input-tokens", "16")
            evs = events()
        served = {url: served_by(url) for url in (a, b, slow)}
    assert result["requests"]["ok"] == result["requests"]["planned"]
    ejects = [e for e in evs if e["type"] == "eject"]
    assert [e["replica"] for e in ejects] == [slow], ejects
    assert "itl" in ejects[0]["reason"], ejects[0]
    # The fault starts 3 s after that serve-sim did (before the gateway); the ejection follows
    # within seconds, while the run goes on.
    start_ns = min(e["time_ns"] for e in evs if e["type"] == "start")
    assert (ejects[0]["time_ns"] - start_ns) / 1e9 < 8, ejects[0]
    # Round robin would have given the slow replica a third; after its ejection it gets none.
    assert served[slow] < 0.25 * sum(served.values()), served
    del started


def served_by(url):
    text = urllib.request.urlopen(url + "/metrics").read().decode()
    return sum(float(v) for v in re.findall(r"^vllm:request_success_total\S* (\S+)", text, re.M))


# ---------------------------------------------------------------------------------------------
# Prefix affinity


def prefix_workload(groups, prefix_tokens=256, users=4):
    return ["--users", str(users), "--duration", "8s", "--prefix-groups", str(groups),
            "--prefix-tokens", str(prefix_tokens), "--input-tokens", "32", "--output-tokens", "4",
            "--seed", "7"]


def test_prefix_affinity_raises_serve_sim_prefix_cache_hits_against_round_robin():
    # 4 shared prefixes of 16 blocks (256 tokens, then 32 of the request's own); each replica's
    # prefix cache holds 48 blocks (3 prefixes): round robin sends all 4 to both and they evict
    # each other (LRU), prefix affinity gives each replica 2.
    sim = ["--itl-base", "2ms", "--prefix-cache-blocks", "48", "--prefill-per-token", "200us"]
    rates = {}
    for policy in ("round_robin", "prefix"):
        with serve_sim(*sim) as (a, _), serve_sim(*sim) as (b, _):
            with gateway("--replica", a, "--replica", b, "--routing", policy,
                         ready=2) as (gw, _, _):
                result, _, _ = load(gw, *prefix_workload(4))
            hits = queries = 0
            for url in (a, b):
                text = urllib.request.urlopen(url + "/metrics").read().decode()
                hits += sum(float(m) for m in re.findall(r"^vllm:prefix_cache_hits_total\S* (\S+)", text, re.M))
                queries += sum(float(m) for m in re.findall(r"^vllm:prefix_cache_queries_total\S* (\S+)", text, re.M))
            rates[policy] = (hits / queries, result["latency"]["ttft"]["mean_ms"])
    print(f"\nserve-sim prefix-cache hit rate / mean TTFT: {rates}")
    assert rates["prefix"][0] > rates["round_robin"][0] + 0.05, rates
    assert rates["prefix"][1] < rates["round_robin"][1], rates


def test_prefix_affinity_raises_llama_server_prompt_cache_reuse():
    # 4 shared prefixes, 2 slots per replica, one request at a time per replica (so a request
    # finds both slots idle and llama-server picks the one holding its prefix), no host-memory
    # prompt cache (--cache-ram 0): round robin makes each replica's 2 slots take turns on 4
    # prefixes; prefix affinity sends each prefix to one replica, whose slots keep it.
    reuse = {}
    server = ["--parallel", "2", "--cache-ram", "0"]
    for policy in ("round_robin", "prefix"):
        with llama_server(*server) as (a, _), llama_server(*server) as (b, _):
            with gateway("--replica", a, "--replica", b, "--routing", policy,
                         "--max-inflight", "1", ready=2) as (gw, _, _):
                result, recs, _ = records(gw, *prefix_workload(4))
        ok = [r for r in recs if r["status"] == 200 and r["server_cache_tokens"] >= 0]
        assert ok, recs[:3]
        reuse[policy] = (sum(r["server_cache_tokens"] for r in ok) /
                         sum(r["prompt_tokens"] for r in ok),
                         result["latency"]["ttft"]["mean_ms"])
    print(f"\nllama-server prompt-cache reuse / mean TTFT: {reuse}")
    # Reuse rises clearly (0.44 -> 0.70-0.75 here, also with both cores busy). It did not when
    # prefixes were placed by their hash alone: these 4 split 3:1, reuse was 0.53-0.57, and a
    # CI run's round robin reached 0.50. Mean TTFT is not asserted: the tiny test model
    # prefills 256 tokens in a few milliseconds, so the gain (about 10%) is within run-to-run
    # noise on a loaded machine (docs/gateway.md has the numbers).
    assert reuse["prefix"][0] > reuse["round_robin"][0] + 0.1, reuse


# ---------------------------------------------------------------------------------------------
# Supervised llama-server replicas: kill -9 mid-stream


def pids_on_port(port):
    out = subprocess.run(["pgrep", "-f", "--", f"--port {port}( |$)"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_idle_connections_up_to_the_descriptor_limit_do_not_eject_a_healthy_replica():
    # With 128 descriptors the gateway takes (128 - 64) / 2 = 32 client connections; 200 idle
    # ones must not leave it without descriptors for its own health checks (a probe saw
    # "accept failed: Too many open files", then its only replica ejected for "2 failed health
    # checks in a row", so every client got 503).
    with serve_sim("--itl-base", "1ms") as (sim, _):
        with gateway("--replica", sim, nofile=128) as (gw, _, events):
            port = int(gw.rsplit(":", 1)[1])
            idle = []
            try:
                for _ in range(200):
                    idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                time.sleep(2)  # 10 health checks (the fixture's 200 ms)
            finally:
                for s in idle:
                    s.close()
            ejected = [e for e in events() if e["type"] == "eject"]
            assert not ejected, ejected
            wait_for(lambda: replicas(gw)[0]["state"] == "ready", 10, "the replica ready")
            body = json.dumps({"prompt": "hi", "max_tokens": 2}).encode()
            req = urllib.request.Request(gw + "/v1/completions", body,
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.status == 200


def test_kill_9_of_a_launched_replica_mid_stream_is_survived_and_it_comes_back():
    if not (LLAMA_SERVER and os.path.exists(LLAMA_SERVER)):
        if IN_CI:
            pytest.fail("llama-server is not built")
        pytest.skip("llama-server is not built")
    command = (f"exec {LLAMA_SERVER} -m {LLAMA_MODEL} --host 127.0.0.1 --port {{port}} "
               f"--parallel 2 -c 2048 --threads 1 --no-webui --metrics")
    with gateway("--launch", command, "--replicas", "2", "--slow-start", "0", ready=2) as (gw, proc, events):
        ports = [int(r["url"].rsplit(":", 1)[1]) for r in replicas(gw)]
        victim = ports[0]
        pids = pids_on_port(victim)
        assert len(pids) == 1, pids
        result = {}
        runner = threading.Thread(target=lambda: result.update(load(
            gw, "--rate", "6", "--duration", "10s", "--output-tokens", "48",
            "--input-tokens", "16", "--timeout", "60s")[0]))
        runner.start()
        time.sleep(3)
        os.kill(pids[0], signal.SIGKILL)
        runner.join(timeout=200)
        assert not runner.is_alive(), "titan load hung"
        # Every request ended: answered, retried elsewhere, or cleanly failed; none hung.
        req = result["requests"]
        assert req["ok"] + sum(req["errors"].values()) == req["planned"], req
        assert req["ok"] >= req["planned"] - 4, req
        assert "timeout" not in req["errors"], req
        # The replica was restarted on its port, warmed and readmitted.
        wait_for(lambda: all(r["state"] == "ready" for r in replicas(gw)), 120, "readmission")
        back = [r for r in replicas(gw) if r["url"].endswith(f":{victim}")][0]
        assert back["restarts"] == 1, back
        types = [e["type"] for e in events() if e.get("replica", "").endswith(f":{victim}")]
        for t in ("process_exited", "process_spawned", "replica_exit"):
            assert t in types, types
        assert types.index("process_exited") < types.index("process_spawned")
        # Its last change of state took it to ready: a readmission, or the end of a stall its cold
        # restart caused under load (a stall is no fault and ends in ready as well).
        moves = [e for e in events() if e.get("replica", "").endswith(f":{victim}") and "to" in e]
        assert moves and moves[-1]["to"] == "ready", [(e["type"], e["to"]) for e in moves]
        new_pid = pids_on_port(victim)
        assert len(new_pid) == 1 and new_pid != pids
        all_pids = pids_on_port(ports[0]) + pids_on_port(ports[1])
    # After the gateway's SIGTERM (the context's exit), no replica is left behind.
    for pid in all_pids:
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().split()[2] == "Z", 30, f"replica {pid} gone")


# ---------------------------------------------------------------------------------------------
# Dynamic batching of embeddings on llama-server


def test_dynamic_batching_of_embeddings_on_llama_server():
    args = ["--api", "embeddings", "--users", "32", "--requests", "120", "--duration", "60s",
            "--input-tokens", "32"]
    with llama_server("--embeddings", "--pooling", "mean") as (url, _):
        direct, _, _ = load(url, *args)
        with gateway("--replica", url, "--batching", "--max-batch-size", "16",
                     "--max-queue-delay", "5ms", "--max-inflight", "4") as (gw, _, _):
            batched, _, _ = load(gw, *args)
            metrics = urllib.request.urlopen(gw + "/metrics").read().decode()
    assert direct["requests"]["ok"] == direct["requests"]["planned"]
    assert batched["requests"]["ok"] == batched["requests"]["planned"]
    sizes = re.search(r"^titan_gateway_batch_size_samples_sum (\S+)", metrics, re.M)
    counts = re.search(r"^titan_gateway_batch_size_samples_count (\S+)", metrics, re.M)
    assert sizes and counts, metrics
    mean_batch = float(sizes.group(1)) / float(counts.group(1))
    assert mean_batch > 2, mean_batch
    ratio = batched["achieved_rate"] / direct["achieved_rate"]
    print(f"\nembeddings on llama-server: {direct['achieved_rate']:.1f}/s direct, "
          f"{batched['achieved_rate']:.1f}/s batched by the gateway (x{ratio:.2f}, "
          f"mean batch {mean_batch:.1f})")
