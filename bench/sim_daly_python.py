#!/usr/bin/env python3
"""The Monte Carlo a capacity planner would otherwise write: Daly's model (exponential failures,
sync checkpoints, failures may hit restarts) in plain Python. Used by bench/sim_bench.sh to
compare speed and answers with `titan sim daly`.

usage: sim_daly_python.py REPLICAS MTBF_HOURS INTERVAL_MINUTES
prints: mean wall days and its 95% half-width
"""
import math
import random
import sys


def replica(rng, work, interval, delta, restart, mtbf):
    t, done = 0.0, 0.0
    next_failure = rng.expovariate(1 / mtbf)
    while done < work:
        segment = min(interval, work - done)
        length = segment + (delta if done + segment < work else 0.0)
        if t + length <= next_failure:
            t += length
            done += segment
            continue
        t = next_failure  # lose the segment, then restart (failures may hit the restart too)
        next_failure = t + rng.expovariate(1 / mtbf)
        while t + restart > next_failure:
            t = next_failure
            next_failure = t + rng.expovariate(1 / mtbf)
        t += restart
    return t


def main():
    replicas, mtbf_hours, interval_minutes = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    rng = random.Random(1)
    walls = [replica(rng, 30000 * 60.0, interval_minutes * 60, 300.0, 600.0, mtbf_hours * 3600) / 86400
             for _ in range(replicas)]
    mean = sum(walls) / len(walls)
    sd = math.sqrt(sum((w - mean) ** 2 for w in walls) / (len(walls) - 1))
    print(f"{mean:.4f} {1.96 * sd / math.sqrt(len(walls)):.4f}")


if __name__ == "__main__":
    main()
