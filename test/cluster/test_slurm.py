"""`titan run` under a real Slurm (slurm_cluster.py: munged, slurmctld, three slurmd on
loopback) with a real etcd and real PyTorch DDP workers (examples/train_tiny_lm.py, gloo).

- A node whose workers crash is drained through `--on-isolate slurm-drain` (sinfo shows it
  with titan's reason), and a spare node takes its place: the job finishes with the same
  parameters, bit for bit, as a run that never failed.
- Without etcd, the nodes meet through Slurm's node list (the master is its first node's
  NodeAddr): the job trains as one; a failure ends it with a clear verdict.
- A node whose slurmd is killed is seen by its own titan run (Slurm marks it NOT_RESPONDING),
  which leaves the job; the others restart without it and finish.
Both check that nothing titan started is left running.

Run: TITAN_BIN=build/release/tools/titan/titan PYTHONPATH=build/release/python \
         /usr/bin/python3 -m pytest -q test/cluster/test_slurm.py
"""
import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "run"))
from test_run_e2e import (EXAMPLE, PY, STEPS, TITAN, assert_no_survivors, baseline,  # noqa: E402,F401
                          baseline_dir, etcd_server, events, result, work)
from slurm_cluster import SlurmCluster, available  # noqa: E402

why_not = available()
if why_not and os.environ.get("CI") == "true":
    raise RuntimeError(f"the Slurm test cannot run in CI: {why_not}")
pytestmark = [
    pytest.mark.skipif(not TITAN or not os.path.exists(TITAN),
                       reason="TITAN_BIN (the titan binary) is not built"),
    pytest.mark.skipif(why_not is not None, reason=why_not or ""),
]


@pytest.fixture(scope="module")
def cluster():
    with SlurmCluster() as c:
        yield c


def titan_step(tmp, url, titan_args, train_args=""):
    """A batch script: one titan run per node (srun), run dirs per node under tmp."""
    return f"""
export PYTHONPATH={os.environ.get('PYTHONPATH', '')}
srun --no-kill --kill-on-bad-exit=0 --ntasks-per-node=1 bash -c '
  d={tmp}/$SLURMD_NODENAME; mkdir -p $d
  {titan_args}
  exec {TITAN} run {f"--etcd {url} --node-addr 127.0.0.1" if url else ""} --nproc-per-node 1 \\
      --run-dir $d --checkpoint-dir {tmp}/ckpt --failure-grace 1 --lease-ttl 3 --quiet \\
      $EXTRA -- {PY} {EXAMPLE} --steps {STEPS} --ckpt-every 10 --out $d/result.json \\
      {train_args} > $d/titan.log 2>&1'
"""


def log_of(tmp, node):
    try:
        with open(os.path.join(tmp, node, "titan.log")) as f:
            return f"--- {node}\n" + f.read()[-2500:]
    except OSError:
        return f"--- {node}: no log"


def test_a_crashing_node_is_drained_and_a_spare_takes_its_place(cluster, work, baseline):
    tmp = os.path.join(work, "slurm-drain")
    os.makedirs(tmp)
    # Two nodes train (n1, n2: n3 starts 4 s late and waits as the spare); n2's workers crash
    # once, which excludes it (--max-failures 1) and drains it in Slurm.
    extra = """EXTRA="--nnodes 2 --max-failures 1 --on-isolate slurm-drain"
  if [ $SLURMD_NODENAME = n2 ]; then EXTRA="$EXTRA --inject crash@node=1,step=15"; fi
  if [ $SLURMD_NODENAME = n3 ]; then sleep 4; fi"""
    with etcd_server() as url:
        job = cluster.sbatch(["-N3", "--no-kill", "-o", f"{tmp}/job.out"],
                             titan_step(tmp, url, extra))
        info = cluster.wait_job(job)
    logs = "\n".join(log_of(tmp, n) for n in ("n1", "n2", "n3"))
    assert info["JobState"] == "COMPLETED", (info, logs)

    # n2 excluded itself and drained itself through scontrol; Slurm says so.
    ev2 = events(os.path.join(tmp, "n2"))
    assert [e for e in ev2 if e["type"] == "inject"], logs
    excl = [e for e in ev2 if e["type"] == "exclude"]
    assert excl and excl[0]["node"] == "n2", logs
    isolate = [e for e in ev2 if e["type"] == "isolate"]
    assert len(isolate) == 1, (isolate, logs)
    assert isolate[0]["action"] == "slurm-drain" and isolate[0]["ok"], isolate
    assert isolate[0]["command"][:3] == ["scontrol", "update", "NodeName=n2"]
    node = cluster.node("n2")
    assert "DRAIN" in node["State"], node
    assert node["Reason"].startswith("titan: crash: 1 failures within"), node
    with open(os.path.join(tmp, "n2", "ledger.json")) as f:
        assert json.load(f)["isolation_actions"] == {"succeeded": 1, "failed": 0, "dry_run": 0}
    for other in ("n1", "n3"):
        assert "DRAIN" not in cluster.node(other)["State"], (cluster.node(other), logs)

    # The spare took n2's place: same world size, the same parameters bit for bit.
    r = result(os.path.join(tmp, "n1"))
    assert r["world_size"] == 2 and r["restart_count"] == 1, r
    assert 0 < r["started_at_step"] <= 15
    assert r["param_sha256"] == baseline["param_sha256"]
    gens = [e for e in events(os.path.join(tmp, "n3")) if e["type"] == "rendezvous"]
    assert gens and sorted(gens[-1]["members"]) == ["n1", "n3"], gens
    assert_no_survivors(*(os.path.join(tmp, n) for n in ("n1", "n2", "n3")))
    cluster.resume("n2")


def test_a_node_whose_slurmd_dies_leaves_and_the_others_finish(cluster, work):
    tmp = os.path.join(work, "slurm-lost")
    os.makedirs(tmp)
    extra = 'EXTRA="--nnodes 2:3 --last-call 5 --slurm-watch 1s"'
    with etcd_server() as url:
        job = cluster.sbatch(["-N3", "--no-kill", "-o", f"{tmp}/job.out"],
                             titan_step(tmp, url, extra, "--batch 12 --step-sleep 0.25"))
        # Once all three train, n3's slurmd dies (its titan run and workers live on).
        deadline = time.time() + 120
        while True:
            try:
                spawned = all(any(e["type"] == "spawn" for e in events(os.path.join(tmp, n)))
                              for n in ("n1", "n2", "n3"))
            except (OSError, json.JSONDecodeError):
                spawned = False
            if spawned:
                break
            assert time.time() < deadline, "\n".join(log_of(tmp, n) for n in ("n1", "n2", "n3"))
            time.sleep(0.2)
        cluster.kill_slurmd("n3")
        cluster.wait_job(job)
    logs = "\n".join(log_of(tmp, n) for n in ("n1", "n2", "n3"))
    ev3 = events(os.path.join(tmp, "n3"))
    lost = [e for e in ev3 if e["type"] == "lost"]
    assert lost and lost[0]["source"] == "slurm" and "NOT_RESPONDING" in lost[0]["state"], logs
    assert [e for e in ev3 if e["type"] == "decision" and e["action"] == "leave"], logs
    # The others saw it go (its lease was revoked) and finished without it.
    seen = [e for n in ("n1", "n2") for e in events(os.path.join(tmp, n))
            if e["type"] == "lost" and e["nodes"] == ["n3"]]
    assert seen, logs
    r = result(os.path.join(tmp, "n1"))
    assert r["world_size"] == 2 and r["steps"] == STEPS, r
    assert_no_survivors(*(os.path.join(tmp, n) for n in ("n1", "n2", "n3")))
    cluster.resume("n3")


def test_without_etcd_the_nodes_meet_through_slurms_node_list(cluster, work, baseline):
    tmp = os.path.join(work, "slurm-plan")
    os.makedirs(tmp)
    job = cluster.sbatch(["-N2", "-o", f"{tmp}/job.out"], titan_step(tmp, None, 'EXTRA=""'))
    info = cluster.wait_job(job)
    nodes = sorted(d for d in os.listdir(tmp) if d.startswith("n"))
    logs = "\n".join(log_of(tmp, n) for n in nodes)
    assert info["JobState"] == "COMPLETED", (info, logs)
    assert len(nodes) == 2
    first = os.path.join(tmp, nodes[0])
    rdzv = [e for e in events(first) if e["type"] == "rendezvous"]
    assert rdzv[0]["members"] == nodes and rdzv[0]["world_size"] == 2, rdzv
    assert rdzv[0]["master"].startswith("127.0.0.1:"), rdzv  # n1's NodeAddr, from scontrol
    r = result(first)
    assert r["world_size"] == 2 and r["param_sha256"] == baseline["param_sha256"], r

    # A crash cannot be recovered in place without etcd: the job ends and says why.
    tmp = os.path.join(work, "slurm-plan-crash")
    os.makedirs(tmp)
    extra = 'EXTRA="--inject crash@rank=1,step=5"'
    info = cluster.wait_job(cluster.sbatch(["-N2", "-o", f"{tmp}/job.out"],
                                           titan_step(tmp, None, extra)))
    logs = "\n".join(log_of(tmp, n) for n in sorted(os.listdir(tmp)) if n.startswith("n"))
    assert info["JobState"] == "FAILED", (info, logs)
    assert "cannot agree on a restart in place" in logs, logs
    assert_no_survivors(*(os.path.join(tmp, n) for n in os.listdir(tmp) if n.startswith("n")))
