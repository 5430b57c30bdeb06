"""titan run acting on failure risk (issue 35): the real titan binary, a real etcd and real
worker processes (/usr/bin/python3 with the titan module). Four nodes want two places:
  - b's risk is over --drain-risk and its expected lost work exceeds the cost of moving it,
    so it drains before joining (the arithmetic is in its `drain` event);
  - a, c and d join; the lowest-risk two (c, d) become the job, a waits as a spare (by node id
    alone, a and c would have been chosen);
  - the workers get TITAN_CHECKPOINT_INTERVAL_S = Daly's interval for the MTBF of c and d,
    which titan.checkpoint.interval() returns, unless the script chose its own.

Run: TITAN_BIN=build/release/tools/titan/titan PYTHONPATH=build/release/python \
         /usr/bin/python3 -m pytest -q test/run/test_run_risk_e2e.py
"""
import json
import math
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_e2e import PY, TITAN, etcd_server, events  # noqa: E402

pytestmark = pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                                reason="TITAN_BIN (the titan binary) is not built")

WORKER = """
import json, os, sys
from titan import checkpoint
out = os.path.join(sys.argv[1], "worker-" + os.environ["TITAN_NODE_ID"] + ".json")
json.dump({"env": os.environ.get("TITAN_CHECKPOINT_INTERVAL_S"),
           "advised": checkpoint.interval(default=1800),
           "own": checkpoint.interval(600, default=1800)}, open(out, "w"))
"""

RISK = {"horizon_days": 30, "model": "cox_history",
        "nodes": [{"node_name": "b", "p": 0.6}, {"node_name": "a", "p": 0.2},
                  {"node_name": "d", "p": 0.02}, {"node_name": "c", "p": 0.01}]}


def daly(delta, m):
    """Daly (2006) eq. 37, as src/sim/formulas.cc."""
    if delta >= 2 * m:
        return m
    r = delta / (2 * m)
    return math.sqrt(2 * delta * m) * (1 + math.sqrt(r) / 3 + r / 9) - delta


def test_spares_drain_and_checkpoint_interval_follow_the_risk(tmp_path):
    risk = tmp_path / "risk.json"
    risk.write_text(json.dumps(RISK))
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    with etcd_server() as url:
        procs = {}
        for node in ["b", "d", "a", "c"]:
            run_dir = tmp_path / node
            run_dir.mkdir()
            cmd = [TITAN, "run", "--run-dir", str(run_dir), "--quiet", "--etcd", url,
                   "--job-id", "risk", "--nnodes", "2", "--nproc-per-node", "1",
                   "--node-addr", "127.0.0.1", "--node-id", node, "--lease-ttl", "3",
                   "--last-call", "5", "--risk", str(risk), "--drain-risk", "0.5",
                   "--checkpoint-cost", "30s", "--move-cost", "60s",
                   "--", PY, str(worker), str(tmp_path)]
            log = open(run_dir / "titan.log", "w")
            procs[node] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                           env=os.environ.copy())
        try:
            codes = {n: p.wait(timeout=90) for n, p in procs.items()}
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait()
    logs = {n: (tmp_path / n / "titan.log").read_text()[-2000:] for n in procs}
    assert codes == {"a": 0, "b": 0, "c": 0, "d": 0}, logs
    ev = {n: events(str(tmp_path / n)) for n in procs}

    # b drains, with its arithmetic: p x GPUs x (interval/2 + restart) > GPUs x move cost.
    drain_b = [e for e in ev["b"] if e["type"] == "drain"]
    assert drain_b and drain_b[0]["drain"] is True, ev["b"]
    assert drain_b[0]["expected_lost_gpu_hours"] > drain_b[0]["move_cost_gpu_hours"]
    assert "GPU-h" in drain_b[0]["arithmetic"]
    assert not [e for e in ev["b"] if e["type"] == "spawn"]
    # a is below the threshold: no drain, but it is the riskiest of the three that joined.
    assert [e for e in ev["a"] if e["type"] == "drain"][0]["drain"] is False
    assert not [e for e in ev["a"] if e["type"] == "spawn"], "the spare a must not be chosen"

    # c and d are the job; each logs the interval for the MTBF of c and d together.
    hazard = (-math.log1p(-0.01) - math.log1p(-0.02)) / (30 * 86400)
    want = daly(30, 1 / hazard)
    for node in ["c", "d"]:
        adv = [e for e in ev[node] if e["type"] == "checkpoint_interval"]
        assert adv, ev[node]
        assert adv[0]["nodes"] == ["c", "d"]
        assert adv[0]["mtbf_hours"] == pytest.approx(1 / hazard / 3600, rel=1e-9)
        assert adv[0]["interval_s"] == pytest.approx(want, rel=1e-9)
        w = json.load(open(tmp_path / f"worker-{node}.json"))
        assert w["env"] == f"{want:.0f}"
        assert w["advised"] == pytest.approx(round(want))
        assert w["own"] == 600  # a script that set its own interval keeps it
