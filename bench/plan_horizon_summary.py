#!/usr/bin/env python3
"""Scores of `titan plan demand --backtest --json` files per scored horizon, over all series.

    python3 bench/plan_horizon_summary.py B.json [B.json ...]

The issue's accuracy goals are per scored horizon (1 day in 10-minute steps, 7 days in 1-hour
steps, each on the four Helios series). The files are grouped by horizon and step; for each
model scored on every series of a group this prints the mean over the series of MASE, of the
scaled pinball loss at each quantile and over the quantiles (pinball / the in-sample seasonal
naive error, as MASE: unitless, so clusters of different sizes weigh alike; the M5
competition's scaled pinball loss), and of the 90% band's coverage. `lowest` names the
columns where the default model has the least loss of all models and the band's distance from
90% (coverage within 5 points is the goal).
"""
import json
import os
import sys


def main(paths):
    groups = {}
    for path in paths:
        with open(path) as f:
            b = json.load(f)
        key = (b["horizon_steps"] * b["step_seconds"], b["step_seconds"])
        groups.setdefault(key, []).append((path, b))
    for (horizon, step), named in sorted(groups.items()):
        runs = [b for _, b in named]
        default = runs[0]["default_model"]
        everywhere = set.intersection(*(set(b["models"]) for b in runs))
        levels = sorted(set.intersection(
            *(set(b["models"][default]["scaled_pinball"]) for b in runs)), key=float)
        rows = {}
        for model in sorted(everywhere):
            ms = [b["models"][model] for b in runs]
            if not all(set(levels) <= set(m.get("scaled_pinball", {})) for m in ms):
                continue
            mean = lambda values: sum(values) / len(values)
            spl = [mean([m["scaled_pinball"][q] for m in ms]) for q in levels]
            rows[model] = ([mean([m["mase"] for m in ms])] + spl + [mean(spl)] +
                           [mean([m["coverage"]["0.9"] for m in ms])])
        print(f"== {horizon / 86400:g} d at {step / 60:g} min steps, mean over {len(runs)} series: "
              f"{' '.join(os.path.basename(path) for path, _ in named)}")
        heads = ["MASE"] + [f"spl{q}" for q in levels] + ["spl_mean", "cov0.9"]
        print(f"  {'model':18}" + "".join(f"{h:>10}" for h in heads))
        for model, row in rows.items():
            mark = "*" if model == default else ""
            cells = [f"{v:10.4f}" for v in row[:-1]] + [f"{100 * row[-1]:9.1f}%"]
            print(f"  {model + mark:18}" + "".join(cells))
        if default not in rows:
            continue
        lowest = []
        for i, head in enumerate(heads[:-1]):
            if all(rows[default][i] <= row[i] for row in rows.values()):
                lowest.append(head)
        others = [h for h in heads[:-1] if h not in lowest]
        distance = 100 * abs(rows[default][-1] - 0.9)
        print(f"  {default} lowest in: {', '.join(lowest) or 'none'}"
              f"{'; not in: ' + ', '.join(others) if others else ''}; "
              f"its 90% band {distance:.1f} points from nominal")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
