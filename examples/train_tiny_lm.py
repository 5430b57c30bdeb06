#!/usr/bin/env python3
"""A tiny transformer language model trained with PyTorch DDP (gloo, CPU) under `titan run`.

This is the model of how to instrument a training loop for titan; the titan-specific lines are
marked "# titan:". They are:
  * titan.client.init() once: step events go to `titan run` (and `titan agent`), and SIGUSR1
    dumps the Python stacks to $TITAN_STACK_FILE so a hang can be diagnosed;
  * client.step_begin(step) / client.mark("compute") / client.step_end(step) around each step:
    the step events teach titan run the step time (hang bound) and the per-rank compute time
    (straggler detection: in synchronous data parallel all ranks *finish* a step together, so
    the mark before the first collective shows who is slow);
  * titan.checkpoint.load_latest() at start and titan.checkpoint.save() every few steps: after
    a restart the job resumes from the newest intact checkpoint, at any world size.

Determinism: the corpus, the model initialisation and the sample order depend only on --seed
and the step number, never on the world size or on restarts: step s trains on global samples
[s*B, (s+1)*B) split evenly across the ranks, and DDP averages the gradients, so the update is
the same at any world size (up to floating-point summation order) and bit-identical at the same
world size. The output file (--out, rank 0) records the final loss on a fixed held-out batch
and a hash of the parameters, so runs with and without failures can be compared.

    titan run --nproc-per-node 2 --checkpoint-dir /tmp/ckpt -- \
        python3 examples/train_tiny_lm.py --steps 200 --out /tmp/result.json
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import titan.checkpoint  # titan: checkpoints that load at any world size
import titan.client as client  # titan: step events for `titan run`


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=200, help="total training steps")
    p.add_argument("--batch", type=int, default=16, help="global batch (samples per step)")
    p.add_argument("--seq", type=int, default=32, help="tokens per sample")
    p.add_argument("--vocab", type=int, default=48)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--ckpt-every", type=int, default=20, help="checkpoint every N steps")
    p.add_argument("--ckpt-dir", default=os.environ.get("TITAN_CHECKPOINT_DIR", ""),
                   help="default: $TITAN_CHECKPOINT_DIR (set by titan run --checkpoint-dir)")
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds of simulated extra work per step (demo pacing)")
    p.add_argument("--out", default="", help="rank 0 writes the result JSON here")
    return p.parse_args()


class TinyLM(nn.Module):
    def __init__(self, vocab, dim, layers, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq, dim))
        layer = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=2 * dim, dropout=0.0,
                                           batch_first=True)
        self.body = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        h = self.tok(x) + self.pos[: x.shape[1]]
        return self.head(self.body(h, mask=self.mask[: x.shape[1], : x.shape[1]]))


def corpus(n_samples, seq, vocab, seed):
    """A generated 'language': a noisy affine recurrence, learnable but not trivial."""
    g = torch.Generator().manual_seed(seed)
    x = torch.empty(n_samples, seq + 1, dtype=torch.long)
    x[:, 0] = torch.randint(0, vocab, (n_samples,), generator=g)
    noise = torch.rand(n_samples, seq, generator=g) < 0.1
    rand = torch.randint(0, vocab, (n_samples, seq), generator=g)
    for t in range(seq):
        nxt = (5 * x[:, t] + 3) % vocab
        x[:, t + 1] = torch.where(noise[:, t], rand[:, t], nxt)
    return x


def allreduce_per_parameter(_, bucket):
    """DDP communication hook: all-reduce each gradient on its own instead of the flat bucket.

    DDP re-buckets after the first iteration of every process group, so after a restart the
    first step runs with another bucket layout than the uninterrupted run did; with more than
    two ranks the summation order of a bucket all-reduce depends on where an element falls in
    the bucket, and the results differ in the last bits. Per-parameter all-reduces make every
    step bit-identical across restarts (a tiny model: the extra messages cost nothing here)."""
    grads = bucket.gradients()
    for g in grads:
        dist.all_reduce(g)
    flat = torch.cat([g.reshape(-1) for g in grads]).div_(dist.get_world_size())
    fut = torch.futures.Future()
    fut.set_result(flat)
    return fut


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        sys.exit(f"--batch {args.batch} must be divisible by the world size {world}")
    client.init(rank=rank, job="tiny-lm")  # titan: events + stack dumps on SIGUSR1

    torch.manual_seed(args.seed)
    model = TinyLM(args.vocab, args.dim, args.layers, args.seq)
    ddp = nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(None, allreduce_per_parameter)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    data = corpus(args.steps * args.batch, args.seq, args.vocab, args.seed)
    held_out = corpus(64, args.seq, args.vocab, args.seed + 1)

    # titan: resume from the newest intact checkpoint (None: start from scratch).
    state = {"model": model, "optim": opt}
    start = 0
    if args.ckpt_dir:
        saved = titan.checkpoint.load_latest(args.ckpt_dir, state)
        if saved is not None:
            start = saved
    if rank == 0:
        print(f"[tiny-lm] world {world}, start at step {start} (restart "
              f"{os.environ.get('TITAN_RESTART_COUNT', '0')}: "
              f"{os.environ.get('TITAN_RESTART_REASON', 'start')})", flush=True)

    # Preemption: `titan run` forwards SIGTERM; finish the step, checkpoint, exit.
    stop = {"asked": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("asked", True))

    per_rank = args.batch // world
    loss_fn = nn.CrossEntropyLoss()
    loss = torch.tensor(0.0)
    for step in range(start, args.steps):
        client.step_begin(step)  # titan
        lo = step * args.batch + rank * per_rank
        batch = data[lo: lo + per_rank]
        if args.step_sleep:
            time.sleep(args.step_sleep)
        logits = ddp(batch[:, :-1])
        loss = loss_fn(logits.reshape(-1, args.vocab), batch[:, 1:].reshape(-1))
        client.mark("compute")  # titan: local compute done, collectives start
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        client.step_end(step)  # titan
        done = step + 1
        flag = torch.tensor([1 if stop["asked"] else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if args.ckpt_dir and (done % args.ckpt_every == 0 or flag.item()):
            titan.checkpoint.save(state, done, async_=False)  # titan: resume point = done
        if flag.item():
            if rank == 0:
                print(f"[tiny-lm] preempted after step {done}: checkpoint saved", flush=True)
            dist.destroy_process_group()
            return 0

    with torch.no_grad():
        final = loss_fn(model(held_out[:, :-1]).reshape(-1, args.vocab),
                        held_out[:, 1:].reshape(-1)).item()
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    if rank == 0:
        result = {"final_loss": final, "param_sha256": h.hexdigest(), "steps": args.steps,
                  "world_size": world, "started_at_step": start,
                  "restart_count": int(os.environ.get("TITAN_RESTART_COUNT",
                                                      os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")))}
        print(f"[tiny-lm] done: held-out loss {final:.4f} params {h.hexdigest()[:16]}", flush=True)
        if args.out:
            tmp = args.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(result, f)
            os.replace(tmp, args.out)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
