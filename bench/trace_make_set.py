#!/usr/bin/python3
"""Builds an N-rank Kineto trace set from one real rank, for titan trace benchmarks.

usage: trace_make_set.py SOURCE.json.gz OUT_DIR [--ranks 8] [--late-rank 5] [--late-us 2000]

Each rank is the source rank with distributedInfo.rank set, timestamps shifted by a few
microseconds per rank, and, on --late-rank, every NCCL kernel starting --late-us later (it
arrives late at every collective). Written gzipped.
"""
import argparse
import copy
import gzip
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("out_dir")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--late-rank", type=int, default=5)
    ap.add_argument("--late-us", type=int, default=2000)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    with gzip.open(a.source, "rt") as f:
        base = json.load(f)
    events = base.pop("traceEvents")
    for r in range(a.ranks):
        doc = copy.deepcopy(base)
        doc.setdefault("distributedInfo", {})["rank"] = r
        doc["distributedInfo"]["world_size"] = a.ranks
        shift = 3 * r
        out = []
        for e in events:
            e2 = dict(e)
            if "ts" in e2:
                e2["ts"] = e2["ts"] + shift
            if r == a.late_rank and e.get("cat") == "kernel" and "nccl" in e.get("name", ""):
                e2["ts"] += a.late_us
            out.append(e2)
        doc["traceEvents"] = out
        path = os.path.join(a.out_dir, f"rank{r}.json.gz")
        with gzip.open(path, "wt", compresslevel=6) as f:
            json.dump(doc, f, indent=1)
        print(path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
