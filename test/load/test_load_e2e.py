"""End-to-end tests of `titan load` with real servers: `titan serve-sim` (titan's simulated
engine, a real HTTP server process) and llama.cpp's real `llama-server` with a tiny
random-weights model (built by scripts/llama_server.sh; LLAMA_SERVER and TITAN_LLAMA_MODEL
name them). Under CI (CI=true) a missing llama-server is a failure, not a skip.

Run: TITAN_BIN=build/release/tools/titan/titan /usr/bin/python3 -m pytest -q test/load
"""
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest

TITAN = os.environ.get("TITAN_BIN", "")
LLAMA_SERVER = os.environ.get("LLAMA_SERVER", "")
LLAMA_MODEL = os.environ.get("TITAN_LLAMA_MODEL", "")
IN_CI = os.environ.get("CI") == "true"

pytestmark = pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                                reason="TITAN_BIN (the titan binary) is not built")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url}/health not ready in {timeout} s")


@contextlib.contextmanager
def serve_sim(*args):
    """A real `titan serve-sim` process on an ephemeral loopback port (--port 0: the port is read
    from its "listening on" line, so no other test can take it in between); killed at the end."""
    proc = subprocess.Popen([TITAN, "serve-sim", "--port", "0", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        deadline = time.time() + 30
        while url is None and time.time() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError(f"serve-sim exited before listening: rc={proc.wait()}")
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if match:
                url = match.group(1)
        assert url, "serve-sim did not say where it listens"
        # Keep reading its stderr so that it never blocks on a full pipe.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        wait_healthy(url)
        yield url, proc
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def llama_server(*args):
    if not (LLAMA_SERVER and os.path.exists(LLAMA_SERVER) and os.path.exists(LLAMA_MODEL)):
        if IN_CI:
            pytest.fail("llama-server is not built: run `eval \"$(bash scripts/llama_server.sh)\"`")
        pytest.skip("llama-server is not built (bash scripts/llama_server.sh)")
    port = free_port()
    proc = subprocess.Popen(
        [LLAMA_SERVER, "-m", LLAMA_MODEL, "--host", "127.0.0.1", "--port", str(port),
         "--parallel", "4", "-c", "4096", "--metrics", "--threads", "1", "--no-webui", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url, proc
    finally:
        proc.kill()
        proc.wait()


def load(url, *args, expect=0, timeout=300):
    """Runs `titan load [sweep] --url URL ARGS --json FILE`; returns (json, stdout, stderr).

    Unless a test sets --lag-bound itself, runs get a loose one: CI runs these tests beside
    PyTorch jobs on 2 cores, and validity has its own test."""
    sub = [args[0]] if args and args[0] == "sweep" else []
    rest = list(args[len(sub):])
    if "--lag-bound" not in rest:
        rest += ["--lag-bound", "250ms"]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run.json")
        proc = subprocess.run([TITAN, "load", *sub, "--url", url, "--json", out, "-q", *rest],
                              capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == expect, (proc.returncode, proc.stdout, proc.stderr)
        with open(out) as f:
            return json.load(f), proc.stdout, proc.stderr


# ---------------------------------------------------------------------------------------------
# serve-sim


def test_measured_ttft_and_itl_match_the_simulated_engine():
    # One request at a time (closed loop, one user) on an idle engine: TTFT is the prefill,
    # every gap is one decode step of a batch of one. serve-sim's model: prefill = overhead +
    # per_token * tokens; ITL = itl_base * (1 + load_factor * (batch - 1) / max_num_seqs).
    with serve_sim("--prefill-overhead", "5ms", "--prefill-per-token", "100us",
                   "--itl-base", "20ms", "--max-num-seqs", "8") as (url, _):
        result, _, _ = load(url, "--users", "1", "--requests", "8", "--duration", "60s",
                            "--input-tokens", "200", "--output-tokens", "20")
    assert result["requests"]["ok"] == 8
    lat = result["latency"]
    model_ttft_ms = 5 + 0.1 * 200  # 25 ms
    # Tolerance: 15% or 5 ms, whichever is larger (one timer tick and loopback round trip).
    assert abs(lat["ttft_from_send"]["p50_ms"] - model_ttft_ms) <= max(5, 0.15 * model_ttft_ms), lat
    assert abs(lat["itl"]["p50_ms"] - 20) <= 3, lat["itl"]
    assert result["tokens"]["source"] == "usage"
    assert result["tokens"]["output"] == 8 * 20


def test_itl_grows_with_the_running_batch_as_modelled():
    # 8 users keep 8 sequences running: ITL = 20 ms * (1 + 1.0 * 7 / 8) = 37.5 ms.
    with serve_sim("--itl-base", "20ms", "--load-factor", "1.0", "--max-num-seqs", "8",
                   "--prefill-overhead", "1ms", "--prefill-per-token", "10us") as (url, _):
        result, _, _ = load(url, "--users", "8", "--duration", "6s", "--input-tokens", "50",
                            "--output-tokens", "40")
    itl = result["latency"]["itl"]
    assert abs(itl["p50_ms"] - 37.5) <= 0.15 * 37.5, itl


def test_burst_after_quiet_queues_and_is_reported():
    # The user's test: quiet, then 50 at once, here against a small engine so the burst queues.
    with serve_sim("--max-num-seqs", "8", "--itl-base", "5ms") as (url, _):
        result, stdout, _ = load(url, "--arrivals", "burst:quiet=2s,size=50", "--duration", "3s",
                                 "--output-tokens", "20")
    assert result["requests"]["planned"] == 50
    assert result["requests"]["ok"] == 50
    ttft = result["latency"]["ttft"]
    # 50 requests on 8 seats: the last ones wait for several waves of 20 tokens.
    assert ttft["p99_ms"] > 3 * ttft["min_ms"], ttft
    assert ttft["p95_ms"] <= ttft["p99_ms"] <= ttft["max_ms"]
    assert "p99" in stdout and "ttft" in stdout
    # Server metrics were scraped on the same clock and saw the queue.
    series = {s["series"]: s for s in result["server_metrics"]["series"]}
    waiting = [k for k in series if k.startswith("vllm:num_requests_waiting")]
    assert waiting, series.keys()
    assert max(series[waiting[0]]["value"]) > 0


def test_a_stall_shows_in_corrected_latencies_more_than_in_uncorrected_ones():
    # Open loop at 40 req/s with a cap of 4 in flight; the engine stalls 1.5 s mid-run. Requests
    # planned during the stall wait for a slot: from the planned time they see the stall, from
    # their (late) send they do not. Both are reported.
    with serve_sim("--itl-base", "2ms", "--max-num-seqs", "64") as (url, _):
        def stall():
            time.sleep(1.5)
            req = urllib.request.Request(url + "/admin/fault", data=b'{"stall":"1500ms"}',
                                         method="POST",
                                         headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=5).read()
        t = threading.Thread(target=stall)
        t.start()
        result, _, _ = load(url, "--arrivals", "constant:rate=40", "--duration", "5s",
                            "--output-tokens", "8", "--max-concurrency", "4")
        t.join()
    lat = result["latency"]
    assert lat["e2e"]["max_ms"] >= 1400, lat["e2e"]
    # A quarter of the requests were planned during the stall: the corrected p90 sees it.
    assert lat["ttft"]["p90_ms"] >= 500, lat["ttft"]
    # The uncorrected view hides it: only the 4 requests in flight saw it from their send.
    assert lat["ttft_from_send"]["p90_ms"] < 0.3 * lat["ttft"]["p90_ms"], lat
    assert lat["concurrency_wait"]["max_ms"] >= 1000


def test_slo_gate_exit_codes_and_outputs():
    with serve_sim("--itl-base", "5ms") as (url, _), tempfile.TemporaryDirectory() as d:
        records = os.path.join(d, "r.csv")
        perfetto = os.path.join(d, "t.json")
        result, stdout, _ = load(url, "--rate", "20", "--duration", "2s", "--output-tokens", "8",
                                 "--slo", "p99_ttft=10s,p99_itl=1s,errors=0%", "--records",
                                 records, "--perfetto", perfetto)
        assert result["slo"]["passed"] and "SLO: met" in stdout
        assert result["slo"]["attainment"] == 1.0
        with open(records) as f:
            lines = f.read().splitlines()
        assert lines[0].startswith("index,planned_ms")
        assert len(lines) == 1 + result["requests"]["planned"]
        with open(perfetto) as f:
            trace = json.load(f)
        slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        assert len(slices) == result["requests"]["planned"]
        # An SLO that cannot be met: exit 3, and the gate names what was measured.
        result, stdout, _ = load(url, "--rate", "20", "--duration", "1s", "--output-tokens", "8",
                                 "--slo", "p99_ttft=1us", expect=3)
        assert not result["slo"]["passed"] and "MISSED" in stdout


def test_sweep_finds_the_knee_of_a_small_engine():
    # 4 seats, 10 tokens of 10 ms each: about 4 / 0.1 s = 40 req/s of capacity. Past it the
    # queue grows without bound, so a generous 1 s TTFT gate (robust on a loaded CI machine)
    # still puts the knee just under the capacity.
    with serve_sim("--max-num-seqs", "4", "--itl-base", "10ms", "--load-factor", "0",
                   "--max-waiting", "10000") as (url, _):
        result, stdout, _ = load(url, "sweep", "--slo", "p99_ttft=1s", "--start-rate", "5",
                                 "--max-rate", "160", "--probe-duration", "4s",
                                 "--output-tokens", "10", "--precision", "0.25", timeout=600)
    assert result["knee_found"], stdout
    assert 15 <= result["knee_rate"] <= 45, (result["knee_rate"], stdout)
    assert "<- knee" in stdout
    failed = [p for p in result["probes"] if not p["passed"]]
    assert failed and all(p["rate"] > result["knee_rate"] for p in failed)


def test_a_client_that_cannot_keep_its_schedule_marks_the_run_invalid():
    with serve_sim("--itl-base", "1ms") as (url, _):
        # No client keeps a schedule within 1 us: the run is invalid, exit 4, and says why.
        result, stdout, _ = load(url, "--rate", "200", "--duration", "1s", "--output-tokens", "4",
                                 "--lag-bound", "1us", expect=4)
        assert not result["valid"]
        assert "INVALID RUN: schedule lag p99" in stdout
        # With the automatic bound the same run is valid.
        result, _, _ = load(url, "--rate", "200", "--duration", "1s", "--output-tokens", "4",
                            "--lag-bound", "auto")
        assert result["valid"], result["notes"]


def test_errors_are_classified_not_fatal():
    port = free_port()  # nothing listens here
    # Nothing measured: the run is invalid (exit 4), with every error classified.
    result, stdout, _ = load(f"http://127.0.0.1:{port}", "--rate", "20", "--duration", "1s",
                             "--scrape", "off", "--tokenize", "off", expect=4)
    assert result["requests"]["ok"] == 0
    assert not result["valid"] and any("none of the" in n for n in result["notes"]), result
    assert result["requests"]["errors"].get("connect", 0) == result["requests"]["planned"]
    assert "connect" in stdout
    with serve_sim("--fault", "error-rate=0.5") as (url, _):
        result, _, _ = load(url, "--rate", "50", "--duration", "2s", "--output-tokens", "4")
    assert result["requests"]["errors"].get("http_5xx", 0) > 0
    assert result["requests"]["ok"] > 0


def test_every_api_and_workload_source_runs():
    with serve_sim("--itl-base", "2ms") as (url, _), tempfile.TemporaryDirectory() as d:
        for api in ("chat", "embeddings"):
            result, _, _ = load(url, "--api", api, "--rate", "20", "--duration", "1s",
                                "--output-tokens", "4")
            assert result["requests"]["ok"] == result["requests"]["planned"] > 0, (api, result)
            if api == "chat":
                assert result["latency"]["itl"]["count"] > 0
        # A trace replay: an Azure-format CSV, 2x faster; the trace's own lengths are sent.
        trace = os.path.join(d, "azure.csv")
        with open(trace, "w") as f:
            f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
            for i in range(10):
                f.write(f"2023-11-16 18:15:{46 + i // 5}.{(i % 5) * 2}000000,{50 + i},{3 + i}\n")
        result, _, _ = load(url, "--trace", trace, "--time-scale", "2")
        assert result["requests"]["ok"] == 10
        assert result["tokens"]["output"] == sum(3 + i for i in range(10))
        assert result["tokens"]["prompt"] == sum(50 + i for i in range(10))
        # Shared-prefix groups reach serve-sim's prefix cache.
        result, _, _ = load(url, "--rate", "50", "--duration", "2s", "--prefix-groups", "2",
                            "--prefix-tokens", "256", "--input-tokens", "16",
                            "--output-tokens", "2")
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            metrics = r.read().decode()
        hits = [float(line.split()[-1]) for line in metrics.splitlines()
                if line.startswith("vllm:prefix_cache_hits_total")]
        assert hits and hits[0] > 0, metrics


def test_bad_workload_files_name_file_line_and_column():
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "trace.csv")
        with open(trace, "w") as f:
            f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,100,20\n"
                    "2023-11-16 18:15:47.1000000,abc,20\n")
        proc = subprocess.run([TITAN, "load", "--url", "http://127.0.0.1:9", "--trace", trace],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2, proc
        assert re.search(r"trace\.csv:3:\d+", proc.stderr), proc.stderr
        proc = subprocess.run([TITAN, "load", "--url", "http://127.0.0.1:9", "--arrivals",
                               "burst:size=-1"], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2 and "burst" in proc.stderr, proc


# ---------------------------------------------------------------------------------------------
# llama.cpp's llama-server


def test_llama_server_burst_after_ten_quiet_seconds():
    # The user's own script: quiet for 10 s, then 50 requests at once; P95/P99 of TTFT and E2E.
    with llama_server() as (url, _):
        result, stdout, _ = load(url, "--arrivals", "burst:quiet=10s,size=50", "--duration",
                                 "11s", "--output-tokens", "16", "--input-tokens", "32",
                                 "--extra-body", '"cache_prompt":false',
                                 # the server's TTFT here is seconds; a loaded 2-core CI
                                 # machine can lag the client by more than the 5 ms default
                                 "--lag-bound", "50ms", timeout=600)
    assert result["requests"]["ok"] == 50, result["requests"]
    for metric in ("ttft", "e2e"):
        d = result["latency"][metric]
        assert 0 < d["p50_ms"] <= d["p95_ms"] <= d["p99_ms"] <= d["max_ms"], d
    # 50 requests on 4 slots queue: the slowest first token waits for many others.
    assert result["latency"]["ttft"]["p99_ms"] > 3 * result["latency"]["ttft"]["min_ms"]
    series = [s["series"] for s in result["server_metrics"]["series"]]
    assert any(s.startswith("llamacpp:requests_deferred") for s in series), series
    assert re.search(r"ttft\s", stdout)


def test_llama_server_timings_agree_with_titan_load():
    # One request at a time: titan's TTFT (from send) against the server's prompt_ms, and titan's
    # time per output token against predicted_per_token_ms.
    with llama_server() as (url, _), tempfile.TemporaryDirectory() as d:
        records = os.path.join(d, "r.jsonl")
        load(url, "--users", "1", "--requests", "6", "--duration", "120s", "--input-tokens",
             "64", "--output-tokens", "32", "--records", records, "--extra-body",
             '"cache_prompt":false', timeout=300)
        with open(records) as f:
            rows = [json.loads(line) for line in f]
    assert len(rows) == 6 and all(r["error"] == "none" for r in rows), rows
    for r in rows[1:]:  # the first request also warms the server up
        ttft = r["first_token_ms"] - r["sent_ms"]
        server = r["server_prompt_ms"]
        # TTFT = the server's prompt time + the first decode step + HTTP: it is never less, and
        # within 40 ms + 50% (the first token's own decode step and a loaded 2-core machine).
        assert server > 0 and ttft >= server, r
        assert ttft <= 1.5 * server + 40, r
        per_token = (r["last_token_ms"] - r["first_token_ms"]) / (r["output_tokens"] - 1)
        assert abs(per_token - r["server_per_token_ms"]) <= 0.25 * r["server_per_token_ms"] + 1, r


def test_llama_server_sweep_finds_a_knee():
    with llama_server() as (url, _):
        result, stdout, _ = load(url, "sweep", "--slo", "p99_ttft=1500ms", "--start-rate", "1",
                                 "--max-rate", "64", "--probe-duration", "4s", "--precision",
                                 "0.5", "--input-tokens", "16", "--output-tokens", "8",
                                 "--extra-body", '"cache_prompt":false', timeout=900)
    assert result["knee_found"], stdout
    assert 1 <= result["knee_rate"] < 64, stdout
    assert "<- knee" in stdout


def test_llama_server_sigstop_stall_is_seen_through_corrected_latencies():
    with llama_server() as (url, proc):
        def stall():
            time.sleep(3)
            os.kill(proc.pid, signal.SIGSTOP)
            time.sleep(2)
            os.kill(proc.pid, signal.SIGCONT)
        t = threading.Thread(target=stall)
        t.start()
        result, stdout, _ = load(url, "--arrivals", "constant:rate=4", "--duration", "8s",
                                 "--output-tokens", "8", "--input-tokens", "16",
                                 "--max-concurrency", "2", "--extra-body", '"cache_prompt":false',
                                 "--lag-bound", "50ms", timeout=300)
        t.join()
    lat = result["latency"]
    assert result["requests"]["ok"] == result["requests"]["planned"]
    # The 2 s stall is in the corrected latencies: a quarter of the requests were planned
    # during it ...
    assert lat["ttft"]["max_ms"] >= 1500, lat["ttft"]
    assert lat["ttft"]["p90_ms"] >= 800, lat["ttft"]
    # ... and much less in the uncorrected ones, which hide the wait of the requests planned
    # during the stall (only the 2 in flight saw it from their send); both are in the output.
    assert lat["ttft_from_send"]["p90_ms"] < 0.5 * lat["ttft"]["p90_ms"], lat
    assert "ttft (from send)" in stdout
