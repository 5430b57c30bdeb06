"""A small gloo job for titan run's diagnosis tests (test_run_diagnose_e2e.py): two or more ranks
step and all-reduce, reporting their steps to titan run through titan.client; at --fail-at, rank
--fail-rank fails the way --mode says:

  exception  raises ValueError (the same each time: a bug a restart repeats)
  oom        allocates host memory until the cgroup's OOM killer kills it
  segfault   reads address 0 in native code (faulthandler prints the Python stack)
  hang       sleeps instead of joining the all-reduce the other ranks wait in
  none       (the test kills a rank from outside: a lost peer)
"""
import argparse
import ctypes
import datetime
import faulthandler
import os
import sys
import time

import torch
import torch.distributed as dist

import titan.client as client


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="none",
                   choices=["none", "exception", "oom", "segfault", "hang"])
    p.add_argument("--fail-at", type=int, default=3)
    p.add_argument("--fail-rank", type=int, default=1)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--step-s", type=float, default=0.05)
    a = p.parse_args()
    rank = int(os.environ["RANK"])
    client.init(rank=rank, job="diagnose-e2e")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    print(f"rank {rank} of {dist.get_world_size()} up", flush=True)
    x = torch.ones(1024)
    for step in range(a.steps):
        client.step_begin(step)
        if step == a.fail_at and rank == a.fail_rank:
            if a.mode == "exception":
                raise ValueError(f"bad batch at step {step}: label 50257 out of range for 50000 classes")
            if a.mode == "oom":
                hog = []
                while True:
                    hog.append(bytearray(32 << 20))  # zero-filled: every page touched
            if a.mode == "segfault":
                faulthandler.enable()
                ctypes.string_at(0)
            if a.mode == "hang":
                time.sleep(3600)
        time.sleep(a.step_s)
        client.mark("compute")
        dist.all_reduce(x)
        client.step_end(step)
    dist.destroy_process_group()
    print(f"rank {rank} done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
