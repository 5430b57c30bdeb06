"""End-to-end tests of how `titan gateway` absorbs a replica's transients (docs/gateway.md,
"Stalls, capacity and hedging"), with real replica processes: `titan serve-sim` with injected
faults and llama.cpp's `llama-server` stopped with SIGSTOP, slowed through a cgroup's CPU quota,
and killed. They assert behaviours (which replica got which request, in what order events came,
what the engine holds), never a latency bound. Release builds only: sanitizers slow the replicas
and the gateway unevenly enough to make stalls of their own.

Run: TITAN_BIN=build/release/tools/titan/titan /usr/bin/python3 -m pytest -q test/gateway
"""
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "load"))
from test_gateway_e2e import gateway, replicas, wait_for  # noqa: E402
from test_load_e2e import TITAN, llama_server, load, serve_sim  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                                reason="TITAN_BIN (the titan binary) is not built")


def metric(gw, name):
    """The sum of every sample of metric `name` in the gateway's /metrics."""
    text = urllib.request.urlopen(gw + "/metrics").read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


@contextlib.contextmanager
def access_log():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "access.jsonl")

        def lines():
            with open(path) as f:
                return [json.loads(line) for line in f if line.strip()]

        yield path, lines


def serving_plan(access_log_path):
    """`titan plan serving` on a gateway access log, with a real `titan load sweep` of `titan
    serve-sim` (the report fuzzer's seed) as the per-replica capacity."""
    sweep = os.path.join(ROOT, "src", "report", "corpus", "report_input_fuzzer", "sweep.json")
    out = subprocess.run([TITAN, "plan", "serving", "--demand", access_log_path, "--capacity",
                          sweep, "--step", "1s", "--resolution", "1s", "--horizon", "5s",
                          "--json", "-"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# ---------------------------------------------------------------------------------------------
# A stall is seen while it lasts; the stalled replica gets nothing new until its first byte


def test_a_stalled_replica_gets_no_new_request_between_detection_and_its_first_byte():
    sim = ["--max-num-seqs", "8", "--itl-base", "10ms"]
    with serve_sim(*sim) as (a, _), serve_sim(*sim) as (b, _), \
            serve_sim(*sim, "--fault", "stall=2s@5s") as (victim, _), access_log() as (path, lines):
        with gateway("--replica", a, "--replica", b, "--replica", victim, "--access-log", path,
                     ready=3) as (gw, _, events):
            result, _, _ = load(gw, "--rate", "20", "--duration", "10s", "--input-tokens", "32",
                                "--output-tokens", "24", "--timeout", "60s")
            evs = [e for e in events() if e.get("replica") == victim]
            log = lines()
        plan = serving_plan(path)
    assert result["requests"]["ok"] == result["requests"]["planned"], result["requests"]
    # Issue 36: the gateway's access log is the demand history of a serving plan: 20 requests/s
    # came in, and that is the level forecast for the next seconds.
    assert plan["demand"]["name"] == "requests", plan["demand"]
    forecast_mean = sum(s["mean_demand"] for s in plan["steps"]) / len(plan["steps"])
    assert 10 < forecast_mean < 30, plan["steps"]
    assert plan["max_replicas"] >= 1, plan
    types = [e["type"] for e in evs]
    assert "stall" in types and "unstall" in types, types
    stall = next(e for e in evs if e["type"] == "stall")
    unstall = next(e for e in evs if e["type"] == "unstall" and e["time_ns"] > stall["time_ns"])
    assert "no progress for" in stall["reason"], stall
    assert stall["silence_s"] < 2, stall  # seen while the 2 s stall lasted
    # A stall is no failure: no ejection, no warm-up on its way back.
    assert "eject" not in types and "readmit" not in types, types
    assert unstall["from"] == "stalled" and unstall["to"] == "ready", unstall
    sent_to_victim = sorted(r["sent_time_ns"] for r in log if r["replica"] == victim)
    during = [t for t in sent_to_victim if stall["time_ns"] < t < unstall["time_ns"]]
    assert during == [], (stall["time_ns"], unstall["time_ns"], during)
    assert any(t > unstall["time_ns"] for t in sent_to_victim), "it got no traffic back"
    # The requests that were waiting for a first token there were rescued elsewhere.
    rescued = [r for r in log if r.get("hedge") == "rescue"]
    assert all(r["replica"] != victim for r in rescued if r["hedge_won"]), rescued


# ---------------------------------------------------------------------------------------------
# Ejection that does not remove needed capacity


def test_a_slow_replica_is_weighted_down_not_ejected_when_the_others_cannot_carry_the_load():
    sim = ["--max-num-seqs", "8", "--itl-base", "10ms"]
    with serve_sim(*sim) as (a, _), serve_sim(*sim) as (b, _), \
            serve_sim(*sim, "--fault", "slow=5@3s") as (slow, _), \
            tempfile.NamedTemporaryFile("w", suffix=".yaml") as config:
        # A replica 5x slow finishes few requests a second: judge it on two per interval.
        config.write("outlier:\n  min_requests: 2\n")
        config.flush()
        with gateway("--config", config.name, "--replica", a, "--replica", b, "--replica", slow,
                     ready=3) as (gw, _, events):
            # About 80% of what three such replicas serve (37 requests/s for 64 in, 32 out):
            # two of them could not carry it.
            started = time.time()
            result, _, _ = load(gw, "--rate", "30", "--duration", "20s", "--input-tokens", "64",
                                "--output-tokens", "32", "--timeout", "60s")
            evs = events()
    assert result["requests"]["ok"] == result["requests"]["planned"], result["requests"]
    # While the load lasted, the slow replica stayed in rotation, weighted down. (Once the load
    # ends the others can carry what is left, and an ejection is then right.)
    until_ns = (started + 20) * 1e9
    ejects = [e for e in evs if e["type"] == "eject" and e["time_ns"] < until_ns]
    assert ejects == [], ejects
    kept = [e for e in evs if e["type"] == "weight" and e["replica"] == slow]
    assert kept, [e for e in evs if e.get("replica") == slow]
    assert "not ejected" in kept[0]["reason"] and "req/s offered" in kept[0]["reason"], kept[0]
    assert kept[0]["weight"] < 1, kept[0]


# ---------------------------------------------------------------------------------------------
# A healthy fleet: no stall, hedges within their budget


def test_a_healthy_fleet_at_high_load_with_long_prompts_has_no_stall_and_hedges_within_budget():
    rng = random.Random(7)
    rate, seconds = 32.0, 15.0  # about 90-95% of the three replicas with these prompts
    t, rows = 0.0, []
    while t < seconds:
        t += rng.expovariate(rate)
        rows.append({"time_s": round(t, 4), "input_tokens": 4096 if rng.random() < 0.1 else 64,
                     "output_tokens": 32})
    sim = ["--max-num-seqs", "8", "--itl-base", "10ms"]
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "trace.jsonl")
        with open(trace, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        with serve_sim(*sim) as (a, _), serve_sim(*sim) as (b, _), serve_sim(*sim) as (c, _):
            with gateway("--replica", a, "--replica", b, "--replica", c, ready=3) as (gw, _, ev):
                result, _, _ = load(gw, "--trace", trace, "--timeout", "60s")
                hedged = metric(gw, "titan_gateway_hedge_prompt_tokens_total")
                offered = metric(gw, "titan_gateway_prompt_tokens_total")
                evs = ev()
    assert result["requests"]["ok"] == result["requests"]["planned"], result["requests"]
    assert [e for e in evs if e["type"] == "stall"] == []
    assert offered > 0
    assert hedged <= 0.05 * offered, (hedged, offered)


# ---------------------------------------------------------------------------------------------
# llama-server: SIGSTOP (a rescue, the loser cancelled at the engine), CPU quota, SIGKILL


def slots_busy(url):
    """Slots of a llama-server that are processing a task (its /slots endpoint)."""
    slots = json.loads(urllib.request.urlopen(url + "/slots", timeout=5).read())
    return sum(1 for s in slots if s.get("is_processing"))


def stream_text(url, body, timeout=60):
    """POSTs a streamed completion; returns (status, the SSE data payloads, raw bytes)."""
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        raw = r.read()
        status = r.status
        replica = r.headers.get("X-Titan-Replica")
    datas = [line[6:] for line in raw.decode().split("\n") if line.startswith("data: ")]
    return status, datas, raw, replica


def test_a_stopped_llama_server_s_request_is_rescued_and_its_seat_freed_at_the_engine():
    with llama_server() as (a, _), llama_server() as (b, b_proc):
        # No hedge after a late first token: the rescue from the stalled replica is under test.
        with gateway("--replica", a, "--replica", b, "--routing", "round_robin", "--no-hedging",
                     ready=2) as (gw, _, events):
            # Some traffic first, so that the stall watch knows the replicas' pace.
            load(gw, "--rate", "10", "--duration", "4s", "--input-tokens", "16",
                 "--output-tokens", "8")
            body = {"prompt": "The quick brown fox", "max_tokens": 400, "temperature": 0,
                    "seed": 1, "ignore_eos": True, "stream": True}
            _, want, _, _ = stream_text(a, body)  # the answer, straight from a replica
            os.kill(b_proc.pid, signal.SIGSTOP)
            try:
                answers = [stream_text(gw, body) for _ in range(2)]  # round robin: one goes to b
                evs = events()
            finally:
                os.kill(b_proc.pid, signal.SIGCONT)
            # Within a second of SIGCONT the stopped engine has freed the seat: the gateway
            # closed the loser's connection, so llama-server cancels the task it finds closed.
            wait_for(lambda: slots_busy(b) == 0, 1, "b's slots free after SIGCONT")
    assert any(e["type"] == "stall" and e["replica"] == b for e in evs), evs
    hedges = [e for e in evs if e["type"] == "hedge" and e["reason"] == "rescue"]
    assert hedges and all(e["replica"] == b and e["to"] == a for e in hedges), hedges
    for status, datas, raw, replica in answers:
        assert status == 200
        assert replica == a, replica  # the rescue answered
        # Exactly one answer, whole: one completion id, one [DONE], the same text as the
        # replica's own answer to the same request.
        assert datas.count("[DONE]") == 1 and datas[-1] == "[DONE]", raw[-300:]
        chunks = [json.loads(x) for x in datas[:-1]]
        assert len({c["id"] for c in chunks}) == 1, {c["id"] for c in chunks}
        text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
        expect = "".join(c["choices"][0]["text"] for c in map(json.loads, want[:-1])
                         if c["choices"])
        assert text == expect


def cpu_cgroup(pid, quota_us, period_us=100000):
    """Moves `pid` into a new cgroup of the CPU controller with `quota_us` per `period_us`
    (cgroup v1's cpu.cfs_quota_us, or v2's cpu.max); returns a function that moves it back and
    removes the group, or None where no CPU controller can be written here."""
    for root, quota_file in (("/sys/fs/cgroup/cpu", "cpu.cfs_quota_us"),
                             ("/sys/fs/cgroup", "cpu.max")):
        controllers = os.path.join(root, "cgroup.controllers")
        if quota_file == "cpu.max" and not (os.path.exists(controllers) and
                                            "cpu" in open(controllers).read().split()):
            continue
        if not os.path.isdir(root):
            continue
        group = os.path.join(root, f"titan-test-{os.getpid()}-{pid}")
        try:
            os.mkdir(group)
            with open(os.path.join(group, quota_file), "w") as f:
                f.write(f"{quota_us} {period_us}" if quota_file == "cpu.max" else str(quota_us))
            if quota_file == "cpu.cfs_quota_us":
                with open(os.path.join(group, "cpu.cfs_period_us"), "w") as f:
                    f.write(str(period_us))
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(group)
            continue

        def undo():
            with contextlib.suppress(OSError), open(os.path.join(root, "cgroup.procs"), "w") as f:
                f.write(str(pid))
            with contextlib.suppress(OSError):
                os.rmdir(group)
        return undo
    return None


def test_a_llama_server_slowed_by_a_cpu_quota_then_killed_is_taken_out_of_rotation():
    with llama_server() as (a, _), llama_server() as (b, b_proc), access_log() as (path, lines), \
            tempfile.NamedTemporaryFile("w", suffix=".yaml") as config:
        # Starved, b finishes a stream every second or two: its ITL numbers carry over intervals
        # (up to max_window_intervals: 10 s here) until two have finished, then it is judged.
        config.write("outlier:\n  min_requests: 2\n  max_window_intervals: 20\n")
        config.flush()
        with gateway("--config", config.name, "--replica", a, "--replica", b,
                     "--outlier-interval", "500ms", "--access-log", path,
                     ready=2) as (gw, _, events):
            undo = cpu_cgroup(b_proc.pid, 10000)  # 10% of a core
            if undo is None:
                pytest.skip("no writable CPU cgroup controller here")
            try:
                result, _, _ = load(gw, "--rate", "8", "--duration", "8s", "--input-tokens", "16",
                                    "--output-tokens", "16", "--timeout", "60s")
                # Its last requests end with the load; their numbers are judged at the next
                # outlier interval. Give it four.
                with contextlib.suppress(AssertionError):
                    wait_for(lambda: {"weight", "stall", "eject"} &
                             {e["type"] for e in events() if e.get("replica") == b}, 2, "")
            finally:
                undo()
            slowed = [e["type"] for e in events() if e.get("replica") == b]
            served = [r["replica"] for r in lines()]
            # Then b, back in rotation (an ejection for slowness lasts 5 s), dies: its requests
            # fail before their first byte and go to a; it is ejected.
            wait_for(lambda: any(r["url"] == b and r["state"] == "ready" for r in replicas(gw)),
                     60, "b back in rotation")
            killed_ns = time.time_ns()
            b_proc.kill()
            b_proc.wait()
            after, _, _ = load(gw, "--rate", "8", "--duration", "4s", "--input-tokens", "16",
                               "--output-tokens", "16", "--timeout", "60s")
            evs = [e for e in events() if e["time_ns"] > killed_ns]
    assert result["requests"]["ok"] == result["requests"]["planned"], result["requests"]
    # Slowed, b answers less than a: the gateway moved work off it. Its outlier rule judged it
    # (weighted down or ejected), though it finishes fewer requests an interval than min_requests,
    # or its stall watch took it out while silent. Hedges alone do not count: their budget (5% of
    # the prompt tokens) allows two or three here, and a loaded machine may leave none.
    assert served.count(b) < served.count(a), (served.count(a), served.count(b))
    assert {"weight", "stall", "eject"} & set(slowed), slowed
    assert after["requests"]["ok"] == after["requests"]["planned"], after["requests"]
    assert any(e["type"] == "eject" and e["replica"] == b for e in evs), evs
