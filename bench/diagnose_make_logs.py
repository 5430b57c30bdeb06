#!/usr/bin/env python3
"""Writes the inputs of bench/diagnose_bench.sh:

  logs/rank-N.log   RANKS worker logs of ~BYTES each: a torchrun-style job's output (NCCL INFO
                    lines, step logs, warnings), one root fault on rank ROOT (an illegal memory
                    access at step 7310) and on every other rank, ten minutes later, the
                    ProcessGroupNCCL watchdog timeouts and aborts that follow it
  fr/nccl_trace_rank_N  FR_RANKS Flight Recorder dumps (pickle, the documented format: version,
                    pg_config, entries) of ENTRIES collectives each; rank FR_LATE never issued the
                    last collective the others wait in

usage: diagnose_make_logs.py OUT_DIR [RANKS BYTES ROOT FR_RANKS ENTRIES FR_LATE]
"""
import os
import pickle
import random
import sys


def write_rank_logs(out, ranks, size, root):
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    rnd = random.Random(7)
    for r in range(ranks):
        host = f"gpu{r // 8:04d}"
        pid = 10000 + r
        lines = [f"{host}:{pid}:{pid} [{r % 8}] NCCL INFO Bootstrap : Using eth0:10.0.{r // 256}.{r % 256}<0>",
                 f"{host}:{pid}:{pid} [{r % 8}] NCCL INFO NET/IB : Using [0]mlx5_{r % 8}:1/IB ; OOB eth0",
                 f"{host}:{pid}:{pid + 1} [{r % 8}] NCCL INFO comm 0x55d4 rank {r} nranks {ranks} cudaDev {r % 8} busId {(r % 8) * 0x10 + 0x1b:x}000 - Init COMPLETE"]
        body = []
        step = 7000
        total = sum(len(x) + 1 for x in lines)
        while total < size - 2000:
            step += 1
            choice = rnd.random()
            if choice < 0.6:
                line = (f"[rank{r}]:2024-05-06 10:{(step // 60) % 60:02d}:{step % 60:02d},123 INFO "
                        f"step {step} loss {2.5 - step / 10000:.4f} lr 3.0e-4 grad_norm {rnd.uniform(0.5, 2):.3f} "
                        f"tokens/s {rnd.randint(90000, 110000)}")
            elif choice < 0.9:
                line = (f"{host}:{pid}:{pid + 2} [{r % 8}] NCCL INFO Channel {rnd.randint(0, 31):02d}/0 : "
                        f"{r} -> {(r + 1) % ranks} via NET/IB/{r % 8}/GDRDMA")
            else:
                line = (f"[rank{r}]:/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:90: UserWarning: "
                        f"None of the inputs have requires_grad=True. Gradients will be None")
            body.append(line)
            total += len(line) + 1
        if r == root:
            body.insert(len(body) // 2,
                        f"[rank{r}]: RuntimeError: CUDA error: an illegal memory access was encountered")
        else:
            body.append(f"[rank{r}]:[E506 10:20:05.123456 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught "
                        f"collective operation timeout: WorkNCCL(SeqNum=7311, OpType=ALLREDUCE, NumelIn=65536, "
                        f"NumelOut=65536, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.")
            body.append(f"[rank{r}]:[E506 10:20:05.124 ProcessGroupNCCL.cpp:1664] [PG 0 Rank {r}] Exception "
                        f"(either an error or timeout) detected by watchdog at work: 7311, last enqueued NCCL "
                        f"work: 7311, last completed NCCL work: 7310.")
        with open(os.path.join(out, "logs", f"rank-{r}.log"), "w") as f:
            f.write("\n".join(lines + body) + "\n")


def write_dumps(out, ranks, entries, late):
    d = os.path.join(out, "fr")
    os.makedirs(d, exist_ok=True)
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ranks)))}}
    for r in range(ranks):
        last = entries - 1 if r == late else entries
        es = []
        for i in range(1, last + 1):
            es.append({"record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"),
                       "collective_seq_id": i, "p2p_seq_id": 0, "op_id": i,
                       "profiling_name": "nccl:all_reduce", "time_created_ns": 1714989604000000000 + i * 1000000,
                       "input_sizes": [[4096, 1024]], "input_dtypes": ["BFloat16"],
                       "output_sizes": [[4096, 1024]], "output_dtypes": ["BFloat16"],
                       "state": "completed" if i < entries else "scheduled",
                       "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
                       "retired": i < entries, "timeout_ms": 600000, "is_p2p": False,
                       "frames": [{"name": "all_reduce", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 2696},
                                  {"name": "train_step", "filename": "/job/train.py", "line": 212}]})
        dump = {"version": "2.5", "pg_config": config, "pg_status": {}, "entries": es}
        with open(os.path.join(d, f"nccl_trace_rank_{r}"), "wb") as f:
            pickle.dump(dump, f, protocol=2)


def main():
    out = sys.argv[1]
    ranks, size, root = (int(x) for x in (sys.argv[2:5] if len(sys.argv) > 4 else (1024, 1 << 20, 517)))
    fr_ranks, entries, late = (int(x) for x in (sys.argv[5:8] if len(sys.argv) > 7 else (4096, 64, 3001)))
    write_rank_logs(out, ranks, size, root)
    write_dumps(out, fr_ranks, entries, late)


if __name__ == "__main__":
    main()
