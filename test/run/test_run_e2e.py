"""End to end tests of `titan run` with real components: the real titan binary, a real etcd
(Debian's /usr/bin/etcd on loopback, temporary data directory), real PyTorch DDP workers
(/usr/bin/python3, gloo, examples/train_tiny_lm.py), real signals (SIGKILL for crashes,
SIGSTOP for hangs). Every test also checks that no worker process survives it.

Run: TITAN_BIN=build/release/tools/titan/titan PYTHONPATH=build/release/python \
         /usr/bin/python3 -m pytest -q test/run/test_run_e2e.py
"""
import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest
from titan_process import events, launch

TITAN = os.environ.get("TITAN_BIN", "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "train_tiny_lm.py")
PY = "/usr/bin/python3"
ETCD = "/usr/bin/etcd"
STEPS = 40

pytestmark = pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                                reason="TITAN_BIN (the titan binary) is not built")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def etcd_server(started=None):
    """A real etcd on random loopback ports with a temporary data dir; killed at the end. Its
    Popen is appended to the list `started`, for a test that kills it early."""
    if not os.path.exists(ETCD):
        pytest.skip("etcd is not installed (Debian package etcd-server)")
    with tempfile.TemporaryDirectory() as data:
        client, peer = free_port(), free_port()
        url = f"http://127.0.0.1:{client}"
        proc = subprocess.Popen(
            [ETCD, "--name", "t", "--data-dir", data,
             "--listen-client-urls", url, "--advertise-client-urls", url,
             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"t=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if started is not None:
            started.append(proc)
        try:
            deadline = time.time() + 20
            while True:
                try:
                    req = urllib.request.Request(url + "/v3/kv/range", data=b'{"key":"AA=="}',
                                                 method="POST")
                    urllib.request.urlopen(req, timeout=1).read()
                    break
                except OSError:
                    if time.time() > deadline or proc.poll() is not None:
                        raise RuntimeError("etcd did not start")
                    time.sleep(0.1)
            yield url
        finally:
            proc.kill()
            proc.wait()


def titan_run(tmp, name, extra, train_args=(), timeout=120, wait=True):
    run_dir = os.path.join(tmp, name)
    os.makedirs(run_dir, exist_ok=True)
    cmd = [TITAN, "run", "--run-dir", run_dir, "--checkpoint-dir", os.path.join(tmp, "ckpt"),
           "--failure-grace", "1", "--quiet", *extra, "--",
           PY, EXAMPLE, "--steps", str(STEPS), "--ckpt-every", "10",
           "--out", os.path.join(run_dir, "result.json"), *train_args]
    return launch(cmd, os.path.join(run_dir, "titan.log"), timeout, wait), run_dir


def result(run_dir):
    with open(os.path.join(run_dir, "result.json")) as f:
        return json.load(f)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False


def assert_no_survivors(*run_dirs):
    """Every worker titan run spawned (and its process group) is gone."""
    pids = [w["pid"] for d in run_dirs for e in events(d) if e["type"] == "spawn"
            for w in e["workers"]]
    assert pids, "no workers were spawned"
    deadline = time.time() + 5
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    survivors = [p for p in pids if alive(p)]
    assert not survivors, f"processes survived: {survivors}"
    # Nothing else in their process groups either.
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                assert not (int(fields[2]) in pids and fields[0] != "Z"), \
                    f"pid {entry} survived in worker process group {fields[2]}"
            except (FileNotFoundError, ProcessLookupError):
                pass


@pytest.fixture(scope="module")
def work():
    with tempfile.TemporaryDirectory(prefix="titan-run-e2e-") as tmp:
        yield tmp


@pytest.fixture(scope="module")
def baseline_dir(work):
    """The uninterrupted run: 2 workers on one node, a synchronous checkpoint every 10 steps."""
    tmp = os.path.join(work, "baseline")
    rc, run_dir = titan_run(tmp, "run", ["--nproc-per-node", "2"])
    assert rc == 0, open(os.path.join(run_dir, "titan.log")).read()[-3000:]
    assert_no_survivors(run_dir)
    with open(os.path.join(run_dir, "ledger.json")) as f:
        ledger = json.load(f)
    # No restart, so no restart time (the first spawn used to be charged to it).
    assert (ledger["restarts"], ledger["seconds"]["restart"]) == (0, 0.0), ledger
    return run_dir


@pytest.fixture(scope="module")
def baseline(baseline_dir):
    return result(baseline_dir)


def test_a_training_plan_takes_the_job_from_the_run_directory(baseline_dir):
    """Issue 36: a titan run directory gives `titan plan training` the job's step time, world
    size, checkpoint cost and measured ETTR. It failed with "give --checkpoint-write" when the
    run's checkpoints were synchronous (their commits report no background time)."""
    steps = 200000
    out = subprocess.run([TITAN, "plan", "training", "--run", baseline_dir, "--steps", str(steps),
                          "--failure-rate", "6.5", "--repair", "24h", "--deadline", "30d",
                          "--json", "-"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    with open(os.path.join(baseline_dir, "ledger.json")) as f:
        ledger = json.load(f)
    assert plan["measured_ettr"] == pytest.approx(ledger["ettr"])
    # The job's compute is the run's step time (the median of the ranks' windows, as
    # src/plan/run_measurements.h defines it) x steps x the run's world size.
    p50 = sorted(r["p50_ms"] / 1e3 for e in events(baseline_dir) if e["type"] == "steps"
                 for r in e["ranks"] if r.get("p50_ms", 0) > 0)
    gpu_hours = steps * p50[len(p50) // 2] * ledger["world_size"] / 3600
    assert plan["plan"]["gpu_hours_mean"] == pytest.approx(gpu_hours, rel=0.05), out.stderr
    assert plan["feasible"] and plan["plan"]["probability"] >= 0.9


def test_crash_is_recovered_with_the_same_final_parameters(work, baseline):
    tmp = os.path.join(work, "crash")
    rc, run_dir = titan_run(tmp, "run", ["--nproc-per-node", "2",
                                         "--inject", "crash@rank=1,step=25"])
    assert rc == 0, open(os.path.join(run_dir, "titan.log")).read()[-3000:]
    ev = events(run_dir)
    crash = [e for e in ev if e["type"] == "crash"]
    assert crash and crash[0]["rank"] == 1 and "signal 9" in crash[0]["status"]
    assert [e for e in ev if e["type"] == "restart"], "no restart recorded"
    r = result(run_dir)
    assert r["restart_count"] == 1
    assert 0 < r["started_at_step"] <= 25  # resumed from a checkpoint, not from scratch
    assert r["param_sha256"] == baseline["param_sha256"]
    assert r["final_loss"] == baseline["final_loss"]
    with open(os.path.join(run_dir, "ledger.json")) as f:
        ledger = json.load(f)
    assert ledger["restarts"] == 1
    assert ledger["seconds"]["lost_work"] > 0  # the steps after the last checkpoint were redone
    assert abs(sum(ledger["seconds"].values()) - ledger["wall_seconds"]) < 0.01
    assert_no_survivors(run_dir)


def test_hang_is_detected_within_its_bound_and_its_stack_is_logged(work, baseline):
    tmp = os.path.join(work, "hang")
    rc, run_dir = titan_run(tmp, "run", ["--nproc-per-node", "2", "--hang-floor", "2",
                                         "--inject", "hang@rank=0,step=15"])
    assert rc == 0, open(os.path.join(run_dir, "titan.log")).read()[-3000:]
    ev = events(run_dir)
    hang = [e for e in ev if e["type"] == "hang"]
    assert hang, "hang not detected"
    h = hang[0]
    assert h["rank"] == 0
    # Detected after the bound (no false alarm) and within it plus the documented slack
    # (docs/run.md: bound + 1 s of loop and scheduling delay on a loaded machine).
    assert h["silent_s"] > h["threshold_s"]
    assert h["detection_s"] <= h["threshold_s"] + 1.0
    stacks = [e for e in ev if e["type"] == "stack" and e["rank"] == 0]
    assert stacks and stacks[0]["python"], "no Python stack captured"
    assert "train_tiny_lm.py" in stacks[0]["python"]
    # Native frames of every thread (eu-stack from elfutils, installed by bootstrap; CI is
    # root, so ptrace is allowed): the interpreter's own frames are among them.
    assert stacks[0]["native"], stacks[0]["native_error"]
    assert "TID " in stacks[0]["native"] and "Py" in stacks[0]["native"], stacks[0]["native"]
    r = result(run_dir)
    assert r["param_sha256"] == baseline["param_sha256"]
    assert_no_survivors(run_dir)


def test_repeatedly_failing_node_is_excluded_and_the_job_finishes_smaller(work, baseline):
    tmp = os.path.join(work, "exclude")
    with etcd_server() as url:
        common = ["--etcd", url, "--job-id", "excl", "--nnodes", "1:2", "--nproc-per-node", "1",
                  "--node-addr", "127.0.0.1", "--max-failures", "2", "--lease-ttl", "3",
                  "--last-call", "3", "--inject", "crash@node=1,step=15,times=5"]
        n0, d0 = titan_run(tmp, "node0", common + ["--node-id", "a"], wait=False)
        n1, d1 = titan_run(tmp, "node1", common + ["--node-id", "b"], wait=False)
        try:
            rc0 = n0.wait(timeout=150)
            rc1 = n1.wait(timeout=30)
        finally:
            for p in (n0, n1):
                if p.poll() is None:
                    p.kill()
                    p.wait()
    assert rc0 == 0, open(os.path.join(d0, "titan.log")).read()[-3000:]
    assert rc1 == 0, open(os.path.join(d1, "titan.log")).read()[-3000:]
    ev1 = events(d1)
    excl = [e for e in ev1 if e["type"] == "exclude"]
    assert excl and excl[0]["node"] == "b" and excl[0]["failures"] == 2
    # Exactly two crashes of node b were injected: the third generation ran without it.
    assert len([e for e in ev1 if e["type"] == "inject"]) == 2
    r = result(d0)
    assert r["world_size"] == 1
    assert r["started_at_step"] > 0  # from a checkpoint saved by 2 ranks, loaded by 1
    assert r["final_loss"] == pytest.approx(baseline["final_loss"], rel=1e-3)
    assert_no_survivors(d0, d1)


def test_lost_node_is_detected_through_its_lease(work):
    tmp = os.path.join(work, "lost")
    with etcd_server() as url:
        common = ["--etcd", url, "--job-id", "lost", "--nnodes", "1:2", "--nproc-per-node", "1",
                  "--node-addr", "127.0.0.1", "--lease-ttl", "2", "--last-call", "3",
                  "--inject", "node-loss@node=1,step=8"]
        n0, d0 = titan_run(tmp, "node0", common + ["--node-id", "a"], wait=False)
        n1, d1 = titan_run(tmp, "node1", common + ["--node-id", "b"], wait=False)
        try:
            rc1 = n1.wait(timeout=120)
            rc0 = n0.wait(timeout=120)
        finally:
            for p in (n0, n1):
                if p.poll() is None:
                    p.kill()
                    p.wait()
    assert rc1 == 137  # the simulated machine loss
    assert rc0 == 0, open(os.path.join(d0, "titan.log")).read()[-3000:]
    lost = [e for e in events(d0) if e["type"] == "lost"]
    assert lost and lost[0]["nodes"] == ["b"]
    assert result(d0)["world_size"] == 1
    assert_no_survivors(d0, d1)


def test_a_missing_peer_is_reported_while_titan_run_waits_for_it(work):
    # Was a silent wait until --join-timeout (600 s by default).
    with etcd_server() as url:
        p = subprocess.run([TITAN, "run", "--etcd", url, "--job-id", "alone", "--nnodes", "2",
                            "--node-id", "a", "--join-timeout", "7", "--nproc-per-node", "1",
                            "--run-dir", os.path.join(work, "alone"), "--", "/bin/true"],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "waiting for 1 more node(s): 1 of --min-nodes 2 joined (a)" in p.stderr, p.stderr
    assert "fewer than --min-nodes=2 nodes joined within 7 s" in p.stderr


def wait_for_event(run_dir, predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            if any(predicate(e) for e in events(run_dir)):
                return True
        time.sleep(0.1)
    return False


def test_a_job_whose_etcd_dies_still_ends_with_its_local_result(work):
    """Issue 15 #3: etcd killed mid-job; the workers then finish (exit 0). Both titan runs used
    to wait forever (their completion was written to the store once, its error ignored) and a
    SIGTERM then called the successful job 'stopped (exit 143)'. Now: node a (short
    --finish-timeout) exits 0 on its local result once the store has been unreachable that long;
    node b (long --finish-timeout) gets a SIGTERM while waiting and also exits 0."""
    tmp = os.path.join(work, "etcd-dies")
    started = []
    with etcd_server(started) as url:
        common = ["--etcd", url, "--job-id", "etcddies", "--nnodes", "2", "--nproc-per-node", "1",
                  "--node-addr", "127.0.0.1", "--quiet"]
        procs, dirs = {}, {}
        for node, finish in (("a", "3s"), ("b", "600s")):
            dirs[node] = os.path.join(tmp, node)
            os.makedirs(dirs[node])
            procs[node] = subprocess.Popen(
                [TITAN, "run", *common, "--node-id", node, "--run-dir", dirs[node],
                 "--finish-timeout", finish, "--", PY, "-c", "import time; time.sleep(6)"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(dirs[node], "err"), "w"))
        try:
            for node in "ab":
                assert wait_for_event(dirs[node], lambda e: e["type"] == "spawn", 60), node
            started[0].kill()  # etcd dies while the workers run
            started[0].wait()
            rc_a = procs["a"].wait(timeout=60)
            assert wait_for_event(dirs["b"], lambda e: e["type"] == "exit", 30)
            time.sleep(1.5)  # b is now waiting to confirm the other node's completion
            procs["b"].send_signal(signal.SIGTERM)
            rc_b = procs["b"].wait(timeout=30)
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait()
    err_a = open(os.path.join(dirs["a"], "err")).read()
    assert rc_a == 0, err_a
    finish_a = [e for e in events(dirs["a"]) if e["type"] == "finish"]
    assert finish_a and "unconfirmed" in finish_a[-1]["reason"], finish_a
    assert "--finish-timeout" in finish_a[-1]["reason"]
    assert "the store is unreachable" in err_a
    # One warning for the whole outage, not one per retry.
    outages = [e for e in events(dirs["a"]) if e["type"] == "warning"
               and e.get("store") == "unreachable"]
    assert len(outages) == 1, outages
    assert rc_b == 0, open(os.path.join(dirs["b"], "err")).read()
    finish_b = [e for e in events(dirs["b"]) if e["type"] == "finish"]
    assert finish_b and "stopped by signal 15" in finish_b[-1]["reason"], finish_b
    assert not [e for e in events(dirs["b"]) if e["type"] == "preempt"]
    assert_no_survivors(dirs["a"], dirs["b"])


ENV_SCRIPT = """import json, os, sys
out = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                                      "MASTER_PORT")}
out["argv"] = sys.argv[1:]
out["exe"] = sys.executable
with open(os.path.join(sys.argv[1], "rank%s.json" % out["RANK"]), "w") as f:
    json.dump(out, f)
"""


def test_torchruns_command_line_forms_work_by_changing_one_word(work):
    """Issue 14 item 6: `torchrun --nproc_per_node=2 w.py --lr 1` becomes `titan run ...` (was
    'The following argument was not expected: w.py'); -m MODULE; the static rendezvous."""
    tmp = os.path.join(work, "torchrun-forms")
    os.makedirs(os.path.join(tmp, "pkg"))
    with open(os.path.join(tmp, "w.py"), "w") as f:
        f.write(ENV_SCRIPT)
    with open(os.path.join(tmp, "pkg", "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(tmp, "pkg", "train.py"), "w") as f:
        f.write(ENV_SCRIPT)

    def run(args, out, node="0"):
        os.makedirs(out, exist_ok=True)
        return subprocess.Popen([TITAN, "run", "--quiet", "--run-dir", f"{out}-run{node}", "--python",
                                 PY, *args], cwd=tmp, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def ranks(out):
        return {int(f[4:-5]): json.load(open(os.path.join(out, f)))
                for f in os.listdir(out) if f.startswith("rank")}

    script = os.path.join(tmp, "script")
    p = run(["--nproc_per_node=2", "--tee", "3", "w.py", script, "--lr", "1", "--", "x"],
            script)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "ignoring torchrun's --tee" in err
    r = ranks(script)
    assert sorted(r) == [0, 1]
    assert r[1]["argv"] == [script, "--lr", "1", "--", "x"] and r[1]["WORLD_SIZE"] == "2"
    assert os.path.realpath(r[0]["exe"]) == os.path.realpath(PY)

    module = os.path.join(tmp, "module")
    p = run(["-m", "pkg.train", module], module)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert ranks(module)[0]["argv"] == [module]

    # torchrun's static rendezvous: two nodes told their node rank and rank 0's address.
    static = os.path.join(tmp, "static")
    port = free_port()
    nodes = [run(["--nnodes", "2", "--node_rank", str(i), "--master_addr", "127.0.0.1",
                  "--master_port", str(port), "w.py", static], static, str(i)) for i in (0, 1)]
    for n in nodes:
        _, err = n.communicate(timeout=120)
        assert n.returncode == 0, err
    r = ranks(static)
    assert sorted(r) == [0, 1]
    assert {v["MASTER_PORT"] for v in r.values()} == {str(port)}
    assert {v["WORLD_SIZE"] for v in r.values()} == {"2"}

    typo = subprocess.run([TITAN, "run", "--nproc-per-nod", "2", "w.py"], cwd=tmp,
                          capture_output=True, text=True, timeout=30)
    assert typo.returncode == 2 and "unknown option '--nproc-per-nod'" in typo.stderr


def test_killing_titan_run_leaves_no_orphans(work):
    tmp = os.path.join(work, "orphans")
    proc, run_dir = titan_run(tmp, "run", ["--nproc-per-node", "2"], wait=False)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(os.path.join(run_dir, "events.jsonl")) and \
                    any(e["type"] == "spawn" for e in events(run_dir)):
                break
            time.sleep(0.1)
        time.sleep(1)
        proc.send_signal(signal.SIGKILL)  # no chance to clean up: PDEATHSIG must do it
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert_no_survivors(run_dir)


def test_killing_titan_run_also_kills_what_its_workers_started(work):
    """`titan run -- bash train.sh`: PR_SET_PDEATHSIG kills the shell when titan run is
    SIGKILLed, but not the program the shell started; titan run's guardian process must. A
    child that left the process group (setsid) is reached through the job's cgroup (root with
    cgroup v2, as on CI)."""
    run_dir = os.path.join(work, "grandchildren")
    os.makedirs(run_dir, exist_ok=True)
    pidfile = os.path.join(run_dir, "child.pid")
    script = (f"sleep 300 & echo $! > {pidfile}.tmp; setsid sleep 300 & echo $! >> {pidfile}.tmp;"
              f" mv {pidfile}.tmp {pidfile}; wait")
    cmd = [TITAN, "run", "--run-dir", run_dir, "--quiet", "--nproc-per-node", "1", "--",
           "sh", "-c", script]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not os.path.exists(pidfile):
            time.sleep(0.05)
        with open(pidfile) as f:
            child, escaped = [int(line) for line in f.read().split()]
        assert alive(child) and alive(escaped)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 5
        while time.time() < deadline and (alive(child) or alive(escaped)):
            time.sleep(0.05)
        assert not alive(child), f"the worker's child {child} outlived a SIGKILLed titan run"
        if os.geteuid() == 0 and " - cgroup2 " in open("/proc/self/mountinfo").read():
            assert not alive(escaped), f"the setsid child {escaped} outlived a SIGKILLed titan run"
        else:
            print("NOTE: not root or no cgroup v2: a setsid child is out of titan run's reach")
            os.kill(escaped, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def guardian_of(pid):
    """The guardian titan run `pid` forked: its child named titan-guardian."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/comm") as f:
                    comm = f.read().strip()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == pid and comm == "titan-guardian":
                return int(entry)
    return None


def test_a_run_killed_with_its_guardian_is_cleaned_up_by_the_next_run(work):
    """`kill -9 $RUN $GUARDIAN` (or `pkill -9 titan`): nobody is left to kill what the workers
    started; the next `titan run` with the same --run-dir does, and says so. The guardian does
    not look like titan run (`pkill -f "titan run"` must not hit it)."""
    run_dir = os.path.join(work, "dead-guardian")
    os.makedirs(run_dir, exist_ok=True)
    script = (f"p={run_dir}/children-$RANK.pid; sleep 300 & echo $! > $p.tmp; sleep 300 & "
              f"echo $! >> $p.tmp; setsid sleep 300 & echo $! >> $p.tmp; mv $p.tmp $p; wait")
    cmd = [TITAN, "run", "--run-dir", run_dir, "--quiet", "--nproc-per-node", "2", "--",
           "sh", "-c", script]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pidfiles = [os.path.join(run_dir, f"children-{rank}.pid") for rank in (0, 1)]
    children, escaped = [], []
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not all(os.path.exists(p) for p in pidfiles):
            time.sleep(0.05)
        for p in pidfiles:
            with open(p) as f:
                *in_group, outside = [int(line) for line in f.read().split()]
            children += in_group
            escaped.append(outside)
        guardian = guardian_of(proc.pid)
        assert guardian is not None, "no child of titan run is named titan-guardian"
        with open(f"/proc/{guardian}/cmdline", "rb") as f:
            cmdline = f.read()
        assert b"titan-guardian" in cmdline and b"run" not in cmdline, cmdline
        os.kill(guardian, signal.SIGKILL)  # first: it must not get to clean up either
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert all(alive(p) for p in children), "nothing was left: the test proves nothing"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    again = subprocess.run([TITAN, "run", "--run-dir", run_dir, "--quiet", "--", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"titan run (pid {proc.pid}) died without cleaning up" in again.stderr, again.stderr
    cleanups = [e for e in events(run_dir) if e["type"] == "cleanup"]
    assert len(cleanups) == 1, cleanups
    assert cleanups[0]["previous_pid"] == proc.pid
    assert cleanups[0]["killed_processes"] >= len(children)
    assert len(cleanups[0]["killed_groups"]) == 2
    deadline = time.time() + 5
    while time.time() < deadline and any(alive(p) for p in children):
        time.sleep(0.05)
    assert not any(alive(p) for p in children), "grandchildren outlived the next titan run"
    if os.geteuid() == 0 and " - cgroup2 " in open("/proc/self/mountinfo").read():
        assert cleanups[0]["cgroup"] and cleanups[0]["cgroup_removed"], cleanups[0]
        assert not os.path.exists(cleanups[0]["cgroup"])
        while time.time() < deadline and any(alive(p) for p in escaped):
            time.sleep(0.05)
        assert not any(alive(p) for p in escaped), "setsid grandchildren outlived the next run"
    else:
        print("NOTE: not root or no cgroup v2: a setsid child is out of titan run's reach")
        for p in escaped:
            os.kill(p, signal.SIGKILL)
    assert not os.path.exists(os.path.join(run_dir, "leftovers.json")), \
        "a clean exit left its leftovers record"


def test_sigterm_asks_workers_to_checkpoint_first(work):
    tmp = os.path.join(work, "preempt")
    proc, run_dir = titan_run(tmp, "run", ["--nproc-per-node", "2", "--term-grace", "20"],
                              train_args=["--step-sleep", "0.05"], wait=False)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            if any(e["type"] == "checkpoint" for e in events(run_dir)) if os.path.exists(
                    os.path.join(run_dir, "events.jsonl")) else False:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 143
    ev = events(run_dir)
    assert [e for e in ev if e["type"] == "preempt"]
    stopped = [e for e in ev if e["type"] == "stopped"][-1]
    assert stopped["clean"], "workers did not exit by themselves after SIGTERM"
    # The workers saved a checkpoint after the SIGTERM reached them (the preemption point).
    order = [e["type"] for e in ev]
    assert "checkpoint" in order[order.index("preempt"):], "no checkpoint after SIGTERM"
    assert_no_survivors(run_dir)


def test_metrics_port_serves_and_a_taken_port_is_a_clear_error(work):
    """--metrics-port on titan's one HTTP stack: it serves /metrics, and a second titan run on
    the same port fails at start naming 127.0.0.1:PORT (the stack never sets SO_REUSEPORT)."""
    port = free_port()
    first_dir = os.path.join(work, "metrics-port-1")
    first = subprocess.Popen(
        [TITAN, "run", "--run-dir", first_dir, "--quiet", "--metrics-port", str(port), "--",
         PY, "-c", "import time; time.sleep(60)"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, body = time.time() + 30, ""
        while "titan_run_generation" not in body and time.time() < deadline:
            with contextlib.suppress(OSError):
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                              timeout=10).read().decode()
            time.sleep(0.2)
        assert "titan_run_generation" in body, body
        second = subprocess.run(
            [TITAN, "run", "--run-dir", os.path.join(work, "metrics-port-2"), "--quiet",
             "--metrics-port", str(port), "--", "true"],
            capture_output=True, text=True, timeout=30)
        assert second.returncode == 1, second.stderr
        assert f"127.0.0.1:{port}" in second.stderr and "in use" in second.stderr, second.stderr
    finally:
        first.terminate()
        first.wait(timeout=60)
    assert_no_survivors(first_dir)


def test_bad_input_gives_clear_errors(work):
    bad = subprocess.run([TITAN, "run", "--inject", "boom@rank=1", "--", "true"],
                         capture_output=True, text=True, timeout=10)
    assert bad.returncode == 2 and "boom" in bad.stderr
    with tempfile.TemporaryDirectory() as tmp:
        missing = subprocess.run([TITAN, "run", "--run-dir", tmp, "--quiet", "--",
                                  "/nonexistent/train"], capture_output=True, text=True,
                                 timeout=20)
        assert missing.returncode == 1 and "/nonexistent/train" in missing.stderr
        t0 = time.time()
        unreachable = subprocess.run(
            [TITAN, "run", "--run-dir", tmp, "--etcd", f"http://127.0.0.1:{free_port()}",
             "--nnodes", "2", "--", "true"], capture_output=True, text=True, timeout=30)
        assert unreachable.returncode == 1 and "etcd" in unreachable.stderr
        assert time.time() - t0 < 20
    nocmd = subprocess.run([TITAN, "run"], capture_output=True, text=True, timeout=10)
    assert nocmd.returncode == 2 and "usage" in nocmd.stderr


def test_a_run_that_cannot_write_its_records_says_so_and_exits_3(work):
    """Issue 37: on a full run directory titan run exited 0 and printed `ledger: .../ledger.json`
    for a file it never wrote. The job's own result is fine, so the exit code says what failed:
    3, titan run's records (docs/run.md, exit codes). The full disk is a 64 KiB tmpfs filled
    before the run (as root), else RLIMIT_FSIZE (writes fail with EFBIG, as a full disk does)."""
    run_dir = os.path.join(work, "full")
    os.makedirs(run_dir)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", run_dir],
                             capture_output=True).returncode == 0
    try:
        preexec = None
        if mounted:
            with open(os.path.join(run_dir, "filler"), "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"x" * 4096)
                except OSError:
                    pass
        else:
            def preexec():
                import resource
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        p = subprocess.run([TITAN, "run", "--run-dir", run_dir, "--", "/bin/true"],
                           capture_output=True, text=True, timeout=60, preexec_fn=preexec)
        assert p.returncode == 3, p.stderr
        assert "job finished (exit 3)" in p.stderr, p.stderr
        assert "ledger:    NOT WRITTEN" in p.stderr, p.stderr
        assert "its own records could not be written" in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(run_dir, "ledger.json"))
    finally:
        if mounted:
            subprocess.run(["umount", "-l", run_dir])
