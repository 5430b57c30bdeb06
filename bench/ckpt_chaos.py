"""Seeded kill -9 chaos run of mirrored and node-local checkpoint saves against a real S3 store.

    bench/ckpt_chaos.sh [BUILD_DIR] [TRIALS] [SEED]      (starts the Ceph RGW, runs this)

Two jobs, each killed with SIGKILL TRIALS times at moments drawn from SEED and restarted from
its checkpoints after every kill:

  mirror      1 rank saves asynchronously to a local directory, mirrored to s3://chaos/mirror
              (save(..., mirror=...)); after each save it waits for the copy
              (wait(durable=True)) and prints DURABLE <step>: a claim that the step is durable.
  node-local  2 ranks (gloo), each "node" a directory of its own, commit at s3://chaos/nodes
              (node_local=True); rank 0 prints DURABLE <step> after wait() returns (the commit
              is at the store).

Every step's state is a function of the step (12 MiB: multipart uploads of several parts). The
kill hits every process of the job, one rank first for node-local (a node dying), at a
random moment. After each kill the driver checks what the store and the disks say:
  * every checkpoint committed at the store verifies (every chunk) and loads bit for bit as the
    state of its step;
  * the newest DURABLE claim is committed at the store (or was removed by retention after a
    newer one committed); every local step marked DURABLE (mirror) is at the store likewise;
  * the restarted job resumes from a step at least as new as the newest claim, and the state
    it loads is that step's, bit for bit (the worker checks, prints RESUMED <step>).
Any violation is printed and counted; the summary line says how many. Exit 1 on any.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

STATE_MIB = 12


def state_of(step):
    import torch
    g = torch.Generator().manual_seed(step)
    return {"w": torch.randn(STATE_MIB << 18, generator=g), "step": step}


def same(a, b):
    import torch
    return torch.equal(a["w"].view(torch.int32), b["w"].view(torch.int32)) and a["step"] == b["step"]


# ---------------------------------------------------------------- the job (one rank)

def worker(args):
    import torch
    import titan.checkpoint as ck
    torch.set_num_threads(1)
    node_local = args.mode == "node-local"
    if node_local:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"file://{args.rendezvous}",
                                rank=args.rank, world_size=2)
    local = os.path.join(args.work, f"node{args.rank}" if node_local else "local")
    kw = {"mirror": args.url, "node_local": True} if node_local else {"mirror": args.url}
    probe = state_of(0)
    resumed = ck.load_latest(local, probe, mirror=args.url)
    if resumed is not None:
        if not same(probe, state_of(resumed)):
            print(f"VIOLATION resumed step {resumed} does not hold that step's state", flush=True)
        print(f"RESUMED {resumed}", flush=True)
    step = (resumed or 0) + 1
    while True:
        ck.save(state_of(step), step, dir=local, keep_last=3, **kw)
        if node_local:
            ck.wait()
        else:
            ck.wait(durable=True)
        if args.rank == 0:
            print(f"DURABLE {step}", flush=True)
        step += 1


# ---------------------------------------------------------------- the driver

def sh(cmd, env):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def check_store(mode, url, work, claimed, env, titan):
    """Violations after a kill, as lines."""
    import titan.checkpoint as ck
    out = []
    steps = ck.list_steps(url)
    for step in steps:
        path = f"{url}/step_{step:010d}"
        errors = ck.verify(path)
        if errors:
            out.append(f"{mode}: committed {path} fails verify: {errors[:2]}")
            continue
        got = state_of(0)
        ck.load(path, got)
        if not same(got, state_of(step)):
            out.append(f"{mode}: committed {path} does not hold the state of step {step}")
    kept_from = min(steps) if steps else None
    if claimed is not None and claimed not in steps and (kept_from is None or claimed > kept_from):
        out.append(f"{mode}: step {claimed} was reported durable but is not committed at {url} "
                   f"(it holds {steps})")
    if mode == "mirror":
        local = os.path.join(work, "local")
        for name in sorted(os.listdir(local)) if os.path.isdir(local) else []:
            if not name.startswith("step_"):
                continue
            step = int(name[5:])
            marked = os.path.exists(os.path.join(local, name, "DURABLE"))
            if marked and step not in steps and (kept_from is None or step > kept_from):
                out.append(f"mirror: {name} is marked DURABLE but is not committed at {url}")
    return out, steps


def run_mode(mode, args, env, rng):
    work = tempfile.mkdtemp(prefix=f"titan-chaos-{mode}-")
    url = f"s3://chaos/{mode}-{args.seed}"
    me = os.path.abspath(__file__)
    violations, kills, claims = [], 0, 0
    newest_claim = None
    resumes = []
    for trial in range(args.trials):
        rendezvous = os.path.join(work, f"rdzv-{trial}")
        ranks = 2 if mode == "node-local" else 1
        logs = [open(os.path.join(work, f"trial{trial}-rank{r}.log"), "w+") for r in range(ranks)]
        procs = [subprocess.Popen([sys.executable, me, "worker", "--mode", mode, "--rank", str(r),
                                   "--url", url, "--work", work, "--rendezvous", rendezvous],
                                  stdout=logs[r], stderr=subprocess.STDOUT, env=env)
                 for r in range(ranks)]
        delay = rng.uniform(args.min_s, args.max_s)
        time.sleep(delay)
        order = list(range(ranks))
        rng.shuffle(order)
        for i, r in enumerate(order):  # one rank first: a node dying, then the rest
            if procs[r].poll() is None:
                procs[r].send_signal(signal.SIGKILL)
            if i == 0 and ranks > 1:
                time.sleep(rng.uniform(0, 0.5))
        for p in procs:
            p.wait()
        kills += 1
        for f in logs:
            f.seek(0)
        lines = logs[0].read().splitlines()
        for f in logs:
            f.close()
        for line in lines:
            if line.startswith("VIOLATION"):
                violations.append(f"{mode} trial {trial}: {line}")
            elif line.startswith("RESUMED "):
                step = int(line.split()[1])
                resumes.append(step)
                if newest_claim is not None and step < newest_claim:
                    violations.append(f"{mode} trial {trial}: resumed from step {step}, but step "
                                      f"{newest_claim} was reported durable")
            elif line.startswith("DURABLE "):
                claims += 1
                newest_claim = max(newest_claim or 0, int(line.split()[1]))
        found, steps = check_store(mode, url, work, newest_claim, env, args.titan)
        violations += [f"trial {trial}: {v}" for v in found]
        print(f"{mode} trial {trial}: killed after {delay:.1f} s; newest durable claim "
              f"{newest_claim}; store holds {steps}; resumed from {resumes[-1] if resumes else '-'}",
              flush=True)
    return {"mode": mode, "trials": args.trials, "kills": kills, "durable_claims": claims,
            "newest_claim": newest_claim, "resumes": len(resumes), "violations": violations}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["driver", "worker"])
    p.add_argument("--mode", default="mirror")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--url", default="")
    p.add_argument("--work", default="")
    p.add_argument("--rendezvous", default="")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=37)
    p.add_argument("--min-s", type=float, default=2.0)
    p.add_argument("--max-s", type=float, default=8.0)
    p.add_argument("--titan", default="titan")
    p.add_argument("--modes", default="mirror,node-local")
    args = p.parse_args()
    if args.role == "worker":
        return worker(args)
    rng = random.Random(args.seed)
    env = dict(os.environ, OMP_NUM_THREADS="1", TITAN_S3_PART_MIB="5")
    started = time.time()
    results = [run_mode(mode, args, env, rng) for mode in args.modes.split(",")]
    for r in results:
        for v in r["violations"]:
            print("VIOLATION", v)
    total = sum(len(r["violations"]) for r in results)
    print(json.dumps({"seed": args.seed, "seconds": round(time.time() - started, 1),
                      "results": [{k: v for k, v in r.items() if k != "violations"} |
                                  {"violations": len(r["violations"])} for r in results]}))
    print(f"chaos: {sum(r['kills'] for r in results)} kill -9s, "
          f"{sum(r['durable_claims'] for r in results)} durable claims checked, "
          f"{total} violations")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
