#!/usr/bin/python3
"""Writes real PyTorch profiler traces of a 2-rank torch.distributed (gloo) job.

usage: gen_torch_traces.py OUT_DIR [--steps N] [--slow-rank R] [--slow-ms MS]

Each rank trains a small MLP for a few steps with DDP-style all_reduce of gradients, under
torch.profiler with a schedule, and exports a Chrome trace to OUT_DIR/rank<R>.json. Rank
--slow-rank sleeps --slow-ms before each all_reduce, so the other rank waits for it.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, out_dir, steps, slow_rank, slow_ms, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=steps),
    )
    prof.start()
    for _ in range(steps + 2):
        with torch.profiler.record_function("## forward ##"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if rank == slow_rank:
            time.sleep(slow_ms / 1000.0)
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        prof.step()
    prof.stop()
    prof.export_chrome_trace(os.path.join(out_dir, f"rank{rank}.json"))
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--slow-rank", type=int, default=1)
    ap.add_argument("--slow-ms", type=float, default=30.0)
    ap.add_argument("--port", type=int, default=29731)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    mp.spawn(worker, args=(2, a.out_dir, a.steps, a.slow_rank, a.slow_ms, a.port), nprocs=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
