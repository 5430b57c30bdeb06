#!/usr/bin/env bash
# titan plan demand's backtest beside R's forecast package (bench/RESULTS.md "Plan"): on each
# Helios series and scored horizon, titan exports its origins (--export), R forecasts from the
# history before each (bench/plan_r_forecast.R), and titan scores all models alike (--compare).
# Prints MASE, pinball at 0.05/0.95, 90% coverage and seconds per forecast per model.
#
#   bash bench/plan_bench.sh [BUILD_DIR] [R_MODELS_1H] [R_MODELS_10M]
# Defaults: build/release; every R model at 1 h steps; at 10 min steps the ones that finish in
# minutes (tbats and auto.arima with Fourier terms take hours there). Needs Rscript with
# r-cran-forecast.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
models_1h=${2:-r_snaive,r_stlf,r_stlf_arima,r_tbats,r_arima_fourier}
models_10m=${3:-r_snaive,r_stlf}
titan="$build/tools/titan/titan"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for vc in vc3sl vc6YE vchbv vcpDC; do
  for scored in "10m 1d $models_10m" "1h 7d $models_1h"; do
    read -r step horizon models <<<"$scored"
    csv=../shared/data/fleet/helios/${vc}_cluster_sequence.csv
    args=(plan demand "$csv" --value running_gpu_num+pending_gpu_num --step "$step"
      --horizon "$horizon" --backtest)
    dir="$tmp/$vc-$step"
    "$titan" "${args[@]}" --export "$dir" >/dev/null
    start=$(date +%s.%N)
    Rscript bench/plan_r_forecast.R "$dir" "$models" "$dir/r.csv" "$dir/r_times.csv" 2>"$dir/r.log"
    "$titan" "${args[@]}" --compare "$dir/r.csv" --json "$dir/b.json" >/dev/null
    python3 - "$vc" "$step" "$horizon" "$dir/b.json" "$dir/r_times.csv" <<'PY'
import csv, json, sys
vc, step, horizon, path, times = sys.argv[1:]
b = json.load(open(path))
seconds = {}
for row in csv.DictReader(open(times)):
    seconds.setdefault(row["model"], []).append(float(row["seconds"]))
print(f"== {vc}, {horizon} at {step} steps, {len(b['origins'])} origins")
print(f"  {'model':16} {'MASE':>7} {'pin0.05':>8} {'pin0.95':>8} {'cov0.9':>7} {'s/fcst':>8}")
for name, m in b["models"].items():
    s = m.get("seconds_per_forecast")
    if name in seconds:
        s = sum(seconds[name]) / len(seconds[name])
    mark = "*" if name == b["default_model"] else ""
    print(f"  {name + mark:16} {m['mase']:7.3f} {m['pinball']['0.05']:8.3f} "
          f"{m['pinball']['0.95']:8.3f} {100 * m['coverage']['0.9']:6.1f}% "
          f"{s if s is not None else float('nan'):8.4f}")
PY
  done
done
