#!/usr/bin/env python3
"""Writes a synthetic fleet history (fleet JSONL, docs/predict.md) of N GPUs, 8 per node, over
YEARS: failures arrive with a hazard that grows with age and depends on the rack position and the
node's own past (a bad node fails again), a failed GPU leaves and a new one enters the same slot a
day later. For benchmarks only (bench/predict_bench.sh): real fleets are in ../shared/data/fleet.

    predict_make_fleet.py N YEARS SEED > fleet.jsonl
"""
import json
import math
import random
import sys

n, years, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
t0 = 1_600_000_000.0  # 2020-09-13
end = t0 + years * 365.25 * 86400
out = sys.stdout
records = []
for g in range(n):
    node = g // 8
    rack = node // 16
    pos = node % 16  # higher in the rack runs hotter
    attrs = {"node_name": f"node{node:05d}", "slot_name": f"rack{rack:04d}", "position": str(pos // 4),
             "batch": "b" + str(rack % 3)}
    t = t0
    gen = 0
    node_bad = rng.random() < 0.02
    while t < end:
        comp = f"gpu{g:06d}-{gen}"
        records.append((t, json.dumps({"time": t, "component": comp, "event": "enter", "attributes": attrs})))
        base = 0.03 / (365.25 * 86400) * (1 + 0.5 * (pos // 4)) * (4 if node_bad else 1)
        age = 0.0
        failed = False
        while True:
            rate = base * (1 + age / (365.25 * 86400))
            age += rng.expovariate(rate)
            if t + age >= end:
                break
            failed = True
            break
        if not failed:
            break
        tf = t + age
        records.append((tf, json.dumps({"time": tf, "component": comp, "event": "fail",
                                         "class": "xid" if rng.random() < 0.7 else "ecc"})))
        records.append((tf, json.dumps({"time": tf, "component": comp, "event": "leave"})))
        t = tf + 86400
        gen += 1
records.sort(key=lambda r: r[0])
for _, line in records:
    out.write(line + "\n")
out.write(json.dumps({"time": end, "event": "end"}) + "\n")
