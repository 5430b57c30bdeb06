"""Side-by-side checkpoint benchmark for one rank (called by bench/ckpt_bench.sh).

Same state, same directory, same run:
  dd (conv=fsync, and oflag=direct)  the file system's sequential write bandwidth
  titan save (sync)        write + fsync + commit, GB/s and % of the better dd
  torch.save + fsync       what a user would otherwise do, and titan's speed-up
  titan load vs torch.load (warm page cache for both, and cold when this user may drop the
                           cache; titan verifies every checksum)
  async blocking time      vs the time to copy the state into host memory (clone)
  incremental              bytes written after changing 10% of the tensors
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import time

import torch

import titan.checkpoint as ck


def make_state(total_mib, seed=0):
    torch.manual_seed(seed)
    sizes = []
    left = total_mib << 20
    big = 32 << 20
    while left > 0:  # mostly 32 MiB weights, plus a tail of small ones (biases, norms)
        n = min(big, left)
        sizes.append(n)
        left -= n
    tensors = {f"layer{i}.weight": torch.randn(n // 4) for i, n in enumerate(sizes)}
    for i in range(len(sizes)):
        tensors[f"layer{i}.bias"] = torch.randn(4096)
    return tensors


def nbytes(state):
    return sum(t.numel() * t.element_size() for t in state.values())


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def best(fn, reps):
    return min(timed(fn) for _ in range(reps))


def dd(dir, mib, *flags):
    path = os.path.join(dir, "dd.bin")
    out = subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=8M", f"count={mib // 8}",
                          "conv=fsync", *flags], capture_output=True, text=True)
    os.remove(path)
    # "... bytes (...) copied, 1.234 s, 870 MB/s"
    seconds = float(out.stderr.strip().splitlines()[-1].split(",")[-2].split()[0])
    return (mib << 20) / seconds


def drop_page_cache():
    """Empties the page cache (root only); returns False where that is not permitted."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def raw_write_fsync(state, path):
    """The same bytes written sequentially with no format at all: the bandwidth ceiling."""
    with open(path, "wb", buffering=0) as f:
        for t in state.values():
            f.write(t.numpy().data)
        os.fsync(f.fileno())


def torch_save_fsync(state, path):
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(2)
    os.makedirs(args.dir, exist_ok=True)
    state = make_state(args.mib)
    size = nbytes(state)
    gb = size / 1e9
    print(f"state: {len(state)} tensors, {size / 2**20:.0f} MiB, dir {args.dir}")

    rows = []
    counter = [0]

    def fresh():
        counter[0] += 1
        d = os.path.join(args.dir, f"run{counter[0]}")
        shutil.rmtree(d, ignore_errors=True)
        return d

    # Interleave the writers so that each sees the same file-system state.
    dd_bw, dd_direct_bw, raw_s, torch_s, titan_s = [], [], [], [], []
    for _ in range(args.reps):
        dd_bw.append(dd(args.dir, args.mib))
        dd_direct_bw.append(dd(args.dir, args.mib, "oflag=direct"))
        raw = os.path.join(args.dir, "raw.bin")
        raw_s.append(timed(lambda: raw_write_fsync(state, raw)))
        os.remove(raw)
        d = fresh()
        titan_s.append(timed(lambda: ck.save({"model": state}, 1, async_=False, dir=d,
                                             incremental=False)))
        shutil.rmtree(d)
        path = os.path.join(args.dir, "torch.pt")
        torch_s.append(timed(lambda: torch_save_fsync(state, path)))
    dd_best = max(dd_bw + dd_direct_bw)
    t_save = min(titan_s)
    t_torch = min(torch_s)
    rows.append(("write: dd bs=8M conv=fsync", f"{max(dd_bw) / 1e9:.2f} GB/s", ""))
    rows.append(("write: dd bs=8M conv=fsync oflag=direct", f"{max(dd_direct_bw) / 1e9:.2f} GB/s",
                 ""))
    t_raw = min(raw_s)
    rows.append(("write: same bytes, write() + fsync", f"{gb / t_raw:.2f} GB/s", ""))
    rows.append(("write: titan save (sync, fsync, commit)", f"{gb / t_save:.2f} GB/s",
                 f"{gb / t_save / (dd_best / 1e9) * 100:.0f}% of the better dd, "
                 f"{t_raw / t_save * 100:.0f}% of write()+fsync"))
    rows.append(("write: torch.save + fsync", f"{gb / t_torch:.2f} GB/s",
                  f"titan {t_torch / t_save:.1f}x faster"))

    # Load: warm cache for both.
    d = fresh()
    ck.save({"model": state}, 1, async_=False, dir=d, incremental=False)
    target = {"model": {k: torch.empty_like(v) for k, v in state.items()}}
    t_load = best(lambda: ck.load_latest(d, target), args.reps)
    assert all(torch.equal(target["model"][k], v) for k, v in state.items())
    t_tload = best(lambda: torch.load(path), args.reps)
    rows.append(("read: torch.load (warm cache)", f"{gb / t_tload:.2f} GB/s", ""))
    rows.append(("read: titan load_latest (warm, verified)", f"{gb / t_load:.2f} GB/s",
                 f"titan {t_tload / t_load:.1f}x faster"))
    # Cold cache: what a restarted job on a fresh node sees.
    if drop_page_cache():
        cold_titan, cold_torch = [], []
        for _ in range(args.reps):
            drop_page_cache()
            cold_titan.append(timed(lambda: ck.load_latest(d, target)))
            drop_page_cache()
            cold_torch.append(timed(lambda: torch.load(path)))
        c_titan, c_torch = min(cold_titan), min(cold_torch)
        rows.append(("read: torch.load (cold cache)", f"{gb / c_torch:.2f} GB/s", ""))
        rows.append(("read: titan load_latest (cold, verified)", f"{gb / c_titan:.2f} GB/s",
                     f"titan {c_torch / c_titan:.1f}x faster"))
    else:
        rows.append(("read: cold cache", "skipped", "dropping the page cache needs root"))
    os.remove(path)

    # Async: blocking time vs copying the state into host memory.
    d = fresh()
    ck.save({"model": state}, 1, async_=True, dir=d, incremental=False)  # allocates staging
    ck.wait()
    blocking = []
    for i in range(args.reps):
        ck.save({"model": state}, 2 + i, async_=True, dir=d, incremental=False)
        blocking.append(ck.last_stats()["blocking_s"])
        ck.wait()
    t_clone = best(lambda: [v.clone() for v in state.values()], args.reps)
    dst = {k: torch.empty_like(v) for k, v in state.items()}
    for k, v in state.items():
        dst[k].copy_(v)  # touch the pages once
    t_copy = best(lambda: [dst[k].copy_(v) for k, v in state.items()], args.reps)
    t_block = min(blocking)
    rows.append(("async: copy state to host (clone, fresh)", f"{t_clone * 1e3:.0f} ms",
                 f"{gb / t_clone:.1f} GB/s"))
    rows.append(("async: copy state to host (copy_, reused)", f"{t_copy * 1e3:.0f} ms",
                 f"{gb / t_copy:.1f} GB/s"))
    rows.append(("async: titan save blocking time", f"{t_block * 1e3:.0f} ms",
                 f"{gb / t_block:.1f} GB/s, {t_block / t_copy:.2f}x the reused copy"))
    del dst
    shutil.rmtree(d)

    # Incremental: change 10% of the tensors.
    d = fresh()
    ck.save({"model": state}, 1, async_=False, dir=d)
    names = sorted(state)
    random.seed(1)
    # 10% of the weights and 10% of the biases (so 10% of the tensors and of the bytes).
    weights = [n for n in names if n.endswith("weight")]
    biases = [n for n in names if n.endswith("bias")]
    changed = random.sample(weights, max(1, len(weights) // 10)) + \
        random.sample(biases, max(1, len(biases) // 10))
    for n in changed:
        state[n].add_(1.0)
    ck.save({"model": state}, 2, async_=False, dir=d)
    st = ck.last_stats()
    frac = st["written_bytes"] / size
    changed_bytes = sum(nbytes({n: state[n]}) for n in changed)
    rows.append(("incremental: 10% of tensors changed",
                 f"{st['written_bytes'] / 2**20:.0f} MiB written",
                 f"{frac * 100:.1f}% of {size / 2**20:.0f} MiB "
                 f"(changed tensors: {changed_bytes / size * 100:.1f}%)"))
    shutil.rmtree(d)

    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>14}  {note}")


if __name__ == "__main__":
    sys.exit(main())
