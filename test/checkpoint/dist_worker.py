"""One rank of a small data-parallel PyTorch job (gloo) used by the checkpoint e2e tests.

    python3 dist_worker.py MODE RANK WORLD STORE CKPT_DIR OUT_DIR [options...]

Modes:
  train     train --steps N from the latest checkpoint (or from scratch), saving asynchronously
            every --save-every steps; prints "LOSS step value" per step; with --ref-at S, dumps
            this rank's state at step S to OUT_DIR/ref_rank{R}.pt (torch.save) before saving it;
            with --node-local K, CKPT_DIR is the store (s3://...) and ranks save into
            OUT_DIR/node{RANK // K}, a directory per "node" of K ranks (node_local=True);
            with --hang-after S, stops after step S and sleeps (the test kills it with SIGKILL).
  compare   loads the latest checkpoint into a fresh job and compares every tensor bit for bit
            with the references of the saving job (OUT_DIR/ref_rank*.pt); prints "SAME n".
  churn     saves forever (step, step+1, ...) with state derived from the step, for kill -9
            tests; prints "COMMITTED s" whenever rank 0 sees a commit.

The global batch is fixed (GLOBAL_BATCH rows per step, split across ranks), so the loss is the
same function of the step at any world size (up to float summation order).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

import titan.checkpoint as ck

GLOBAL_BATCH = 24
FEATURES = 32
SHARDED_ROWS = 37  # a ZeRO-style sharded buffer: rows split across ranks


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 1))


def batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, FEATURES, generator=g)
    y = x[:, :3].sum(dim=1, keepdim=True) + 0.1 * torch.randn(GLOBAL_BATCH, 1, generator=g)
    return x, y


def my_rows(n, rank, world):
    return n * rank // world, n * (rank + 1) // world


def sharded_state(rank, world):
    begin, end = my_rows(SHARDED_ROWS, rank, world)
    return ck.Shard(torch.zeros(end - begin, 5, dtype=torch.float64), [SHARDED_ROWS, 5],
                    [begin, 0])


def build_state(args, seed):
    model = make_model(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.7)
    return {
        "model": model,
        "optimizer": opt,
        "scheduler": sched,
        "rng": ck.RNGState(),
        "zero": sharded_state(args.rank, args.world),
        "data": {"epoch": 0, "position": 0},
        "step": 0,
    }


def train_step(state, step, rank, world):
    model, opt = state["model"], state["optimizer"]
    x, y = batch(step)
    begin, end = my_rows(GLOBAL_BATCH, rank, world)
    opt.zero_grad()
    # Sum of squared errors of my rows; all-reduced and divided by the global batch = mean.
    loss_sum = ((model(x[begin:end]) - y[begin:end]) ** 2).sum()
    (loss_sum / GLOBAL_BATCH).backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    state["scheduler"].step()
    total = loss_sum.detach().clone()
    dist.all_reduce(total)
    # The sharded buffer: each rank updates its rows from the global step (deterministic).
    shard = state["zero"]
    rows = torch.arange(shard.offsets[0], shard.offsets[0] + shard.tensor.shape[0],
                        dtype=torch.float64)
    shard.tensor += rows[:, None] * 0.5 + step
    state["data"]["position"] += GLOBAL_BATCH
    state["step"] = step + 1
    return total.item() / GLOBAL_BATCH


def reference(state):
    return {
        "model": {k: v.clone() for k, v in state["model"].state_dict().items()},
        "optimizer": state["optimizer"].state_dict(),
        "scheduler": state["scheduler"].state_dict(),
        "zero": (state["zero"].offsets, state["zero"].tensor.clone()),
        "data": dict(state["data"]),
        "step": state["step"],
    }


def load_latest(args, state):
    if args.node_dir:
        return ck.load_latest(args.node_dir, state, mirror=args.ckpt)
    return ck.load_latest(args.ckpt, state)


def save(args, state, step):
    if args.node_dir:
        ck.save(state, step, dir=args.node_dir, mirror=args.ckpt, node_local=True, keep_last=3)
    else:
        ck.save(state, step, async_=True, dir=args.ckpt, keep_last=3)


def run_train(args):
    state = build_state(args, seed=1)
    start = load_latest(args, state) or 0
    print(f"START {start}", flush=True)
    for step in range(start, args.steps):
        loss = train_step(state, step, args.rank, args.world)
        print(f"LOSS {step} {loss!r}", flush=True)
        done = step + 1
        if args.save_every and done % args.save_every == 0:
            if done == args.ref_at:
                torch.save(reference(state), os.path.join(args.out, f"ref_rank{args.rank}.pt"))
            save(args, state, done)
        if args.hang_after and done == args.hang_after:
            ck.wait()
            print(f"HANG {done}", flush=True)
            while True:
                time.sleep(1)
    ck.wait()


def bitwise_equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and \
        torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


def compare(got, want, path, count):
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor) or not bitwise_equal(got, want):
            raise AssertionError(f"{path}: differs: {got!r} vs {want!r}")
        return count + 1
    if isinstance(want, dict):
        if set(got) != set(want):
            raise AssertionError(f"{path}: keys {sorted(got)} vs {sorted(want)}")
        for k in want:
            count = compare(got[k], want[k], f"{path}/{k}", count)
        return count
    if isinstance(want, (list, tuple)):
        for i, (g, w) in enumerate(zip(got, want)):
            count = compare(g, w, f"{path}/{i}", count)
        return count
    if got != want:
        raise AssertionError(f"{path}: {got!r} vs {want!r}")
    return count


def run_compare(args):
    state = build_state(args, seed=99)  # different initial weights: a no-op load would fail
    step = load_latest(args, state)
    refs = [torch.load(os.path.join(args.out, f"ref_rank{r}.pt"))
            for r in range(args.saved_world)]
    ref = refs[0]
    n = compare(state["model"].state_dict(), ref["model"], "model", 0)
    n = compare(state["optimizer"].state_dict(), ref["optimizer"], "optimizer", n)
    n = compare(state["scheduler"].state_dict(), ref["scheduler"], "scheduler", n)
    n = compare(state["data"], ref["data"], "data", n)
    n = compare(state["step"], ref["step"], "step", n)
    # The sharded buffer: rebuild the global tensor from every saving rank, cut my rows.
    full = torch.zeros(SHARDED_ROWS, 5, dtype=torch.float64)
    for r in refs:
        offsets, t = r["zero"]
        full[offsets[0]:offsets[0] + t.shape[0]] = t
    shard = state["zero"]
    want = full[shard.offsets[0]:shard.offsets[0] + shard.tensor.shape[0]]
    n = compare(shard.tensor, want, "zero", n)
    print(f"SAME {n} step {step}", flush=True)
    print(f"RANK {args.rank} FROM_CACHE {ck.last_load_stats()['files_from_cache']}", flush=True)


def churn_state(step):
    g = torch.Generator().manual_seed(step)
    return {"model": {"w": torch.randn(512, 1024, generator=g),        # 2 MiB
                      "b": torch.full((4096,), float(step))},
            "step": step}


def run_churn(args):
    step = (ck.latest_step(args.ckpt) or 0) + 1
    while True:
        state = churn_state(step)
        ck.save(state, step, async_=True, dir=args.ckpt, keep_last=2, keep_every=0)
        if args.rank == 0:
            latest = ck.latest_step(args.ckpt)
            print(f"COMMITTED {latest}", flush=True)
        step += 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode")
    p.add_argument("rank", type=int)
    p.add_argument("world", type=int)
    p.add_argument("store")
    p.add_argument("ckpt")
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--ref-at", type=int, default=-1)
    p.add_argument("--hang-after", type=int, default=0)
    p.add_argument("--saved-world", type=int, default=4)
    p.add_argument("--node-local", type=int, default=0)
    args = p.parse_args()
    args.node_dir = (os.path.join(args.out, f"node{args.rank // args.node_local}")
                     if args.node_local else None)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{args.store}", rank=args.rank,
                            world_size=args.world)
    {"train": run_train, "compare": run_compare, "churn": run_churn}[args.mode](args)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
