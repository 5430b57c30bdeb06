#!/usr/bin/python3
"""Stretches a real `titan load --json` result into the result of a long run, for titan report
benchmarks: a 1,000,000-request run does not fit a benchmark's time on 2 cores (it is hours at
the rates a server here sustains), but its JSON differs from a short run's only in length: the
per-second timeline and the scraped server series (every 250 ms) grow with the duration, the
distributions (summary quantiles and percentile curves) do not.

usage: report_make_load.py REAL_RUN.json OUT.json [--requests 1000000] [--rate 100]

The timeline repeats the real run's seconds (planned, completed, TTFT per second...) with a
burst every 10 minutes; each scraped series repeats its real samples every 250 ms.
"""
import argparse
import copy
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--rate", type=float, default=100.0)
    a = ap.parse_args()
    with open(a.source) as f:
        run = json.load(f)
    seconds = int(a.requests / a.rate)
    base = run["timeline"]
    assert base, "the source run has no timeline"
    timeline = []
    for s in range(seconds):
        b = copy.copy(base[s % len(base)])
        b["second"] = s
        scale = a.rate / max(1, b["planned"])
        for k in ("planned", "completed", "output_tokens"):
            b[k] = int(b[k] * scale)
        if s % 600 == 300:  # a burst every 10 minutes
            b["planned"] *= 5
        timeline.append(b)
    run["timeline"] = timeline
    for series in run["server_metrics"]["series"]:
        values = series["value"] or [0]
        n = seconds * 4
        series["time_s"] = [round(i * 0.25, 3) for i in range(n)]
        series["value"] = [values[i % len(values)] for i in range(n)]
    run["requests"]["planned"] = run["requests"]["ok"] = a.requests
    run["duration_s"] = run["elapsed_s"] = float(seconds)
    with open(a.out, "w") as f:
        json.dump(run, f)


if __name__ == "__main__":
    main()
