"""titan run diagnoses each failure and decides by its class, with real components: the real titan
binary, real PyTorch gloo workers (/usr/bin/python3, test/run/diagnose_worker.py), real
exceptions, a real OOM kill in the job's cgroup (memory.events, or cgroup v1's memory.oom_control
on hybrid machines), a real segfault, a real hang in an all-reduce one rank never joins, and a
rank killed from outside (a lost peer). Windows are short (--hang-floor 3s), so a regression fails
in seconds; CTest bounds the file (TIMEOUT).

Run: TITAN_BIN=build/release/tools/titan/titan PYTHONPATH=build/release/python \\
         /usr/bin/python3 -m pytest -q test/run/test_run_diagnose_e2e.py
"""
import json
import os
import signal
import tempfile
import time

import pytest
from titan_process import events, launch

TITAN = os.environ.get("TITAN_BIN", "")
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "diagnose_worker.py")
PY = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                                reason="TITAN_BIN (the titan binary) is not built")


@pytest.fixture
def work():
    with tempfile.TemporaryDirectory(prefix="titan-diag-e2e-") as d:
        yield d


def run(work, name, mode, extra=(), worker_args=(), timeout=90, wait=True):
    run_dir = os.path.join(work, name)
    os.makedirs(run_dir, exist_ok=True)
    cmd = [TITAN, "run", "--run-dir", run_dir, "--nproc-per-node", "2", "--failure-grace", "1",
           "--hang-floor", "3s", "--startup-timeout", "60s", "--stack-wait", "2s",
           "--dump-wait", "1s", *extra, "--", PY, WORKER, "--mode", mode, *worker_args]
    return launch(cmd, os.path.join(run_dir, "titan.out"), timeout, wait), run_dir


def of(evs, kind):
    return [e for e in evs if e["type"] == kind]


def text(run_dir):
    with open(os.path.join(run_dir, "titan.out")) as f:
        return f.read()


def ledger(run_dir):
    with open(os.path.join(run_dir, "ledger.json")) as f:
        return json.load(f)


def test_same_exception_at_the_same_step_stops_after_one_restart(work):
    rc, d = run(work, "exception", "exception", extra=["--max-restarts", "10"])
    evs = events(d)
    assert rc == 1, text(d)
    decisions = of(evs, "decision")
    # One failure, one decision: a restart, then a stop; not ten restarts.
    assert [x["action"] for x in decisions] == ["restart", "stop"], decisions
    assert "deterministic" in decisions[1]["why"] and "at step 3" in decisions[1]["why"]
    diagnoses = of(evs, "diagnosis")
    assert len(diagnoses) == 2
    for diag in diagnoses:
        assert diag["class"] == "user_code" and diag["action"] == "fix_code", json.dumps(diag)
        assert diag["culprit"]["rank"] == 1, json.dumps(diag)
        assert diag["root"]["text"].startswith("ValueError: bad batch at step 3"), json.dumps(diag)
        assert "/ranks/rank-1.gen" in diag["root"]["file"]
    # The run directory holds the traceback, and the terminal still showed it.
    with open(os.path.join(d, "ranks", "rank-1.gen0.log")) as f:
        log = f.read()
    assert log.startswith("[titan run] rank 1 (local rank 1) pid ")
    assert "Traceback (most recent call last):" in log and "ValueError: bad batch" in log
    assert "ValueError: bad batch at step 3" in text(d)
    lg = ledger(d)
    assert lg["diagnosis"]["class"] == "user_code"
    assert lg["verdict"].startswith("stop: the same user_code")
    assert "verdict: stop: the same user_code" in text(d)


def test_oom_in_the_jobs_cgroup_is_host_oom_and_says_what_to_reduce(work):
    rc, d = run(work, "oom", "oom", extra=["--max-restarts", "3", "--memory-max", str(1536 << 20)])
    evs = events(d)
    crashes = of(evs, "crash")
    assert crashes, text(d)
    if "oom_kills" not in crashes[0]:
        pytest.skip("titan run could not make a cgroup with a memory controller here: " +
                    text(d)[-400:])
    assert crashes[0]["rank"] == 1 and "signal 9" in crashes[0]["status"], crashes[0]
    assert crashes[0]["oom_kills"] >= 1
    diag = of(evs, "diagnosis")[0]
    assert diag["class"] == "oom_host" and diag["action"] == "reduce_memory", json.dumps(diag)
    assert diag["culprit"]["rank"] == 1
    decisions = of(evs, "decision")
    assert decisions[0]["action"] == "restart"
    assert "reduce" in decisions[0]["why"], decisions[0]
    assert decisions[-1]["action"] == "stop" and rc == 1, decisions


def test_segfault_is_a_native_crash_of_its_rank(work):
    rc, d = run(work, "segfault", "segfault", extra=["--max-restarts", "3"])
    evs = events(d)
    diag = of(evs, "diagnosis")[0]
    assert diag["class"] == "cuda_software" and diag["action"] == "restart_app", json.dumps(diag)
    assert diag["culprit"]["rank"] == 1, json.dumps(diag)
    assert any("signal 11" in c["status"] for c in of(evs, "crash"))
    assert [x["action"] for x in of(evs, "decision")] == ["restart", "stop"]
    assert rc == 1


def test_hang_in_a_collective_one_rank_never_joins_names_that_rank(work):
    rc, d = run(work, "hang", "hang", extra=["--max-restarts", "0"], timeout=120)
    evs = events(d)
    assert of(evs, "hang"), text(d)
    fr = of(evs, "flight_recorder")
    assert fr and fr[0]["pipes"] == 0, fr  # gloo: no NCCL Flight Recorder pipe to write to
    diag = of(evs, "diagnosis")[0]
    assert diag["class"] == "hang_collective_mismatch", json.dumps(diag)
    assert diag["culprit"]["rank"] == 1, json.dumps(diag)
    assert "diagnose_worker.py" in diag["why"] and "in main" in diag["why"], json.dumps(diag)
    assert of(evs, "decision")[0]["action"] == "stop"  # --max-restarts 0
    assert rc == 1


def test_lost_peer_blames_the_rank_that_died_not_the_one_that_saw_it(work):
    proc, d = run(work, "lost", "none", extra=["--max-restarts", "1", "--memory-max", str(8 << 30)],
                  worker_args=["--steps", "400", "--step-s", "0.05"], wait=False)
    try:
        deadline = time.time() + 60
        victim = None
        while time.time() < deadline and victim is None:
            time.sleep(0.2)
            if os.path.exists(os.path.join(d, "events.jsonl")):
                for e in events(d):
                    if e["type"] == "spawn":
                        victim = [w["pid"] for w in e["workers"] if w["rank"] == 1][0]
        assert victim, text(d)
        time.sleep(4)  # let the ranks step
        os.kill(victim, signal.SIGKILL)
        deadline = time.time() + 60
        while time.time() < deadline and not of(events(d), "diagnosis"):
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    evs = events(d)
    diag = of(evs, "diagnosis")[0]
    assert diag["culprit"]["rank"] == 1, json.dumps(diag)
    assert diag["rule"] == "titan_crash", json.dumps(diag)
    if "oom_kills" in of(evs, "crash")[0]:
        # memory.events counted no OOM kill: something else killed it; titan says it cannot tell.
        assert diag["class"] == "unknown", json.dumps(diag)
    assert of(evs, "decision")[0]["action"] == "restart"
