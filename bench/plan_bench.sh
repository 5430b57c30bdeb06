#!/usr/bin/env bash
# titan plan demand's backtest beside R's forecast package (bench/RESULTS.md "Plan"): on each
# Helios series and scored horizon, titan exports its origins (--export), R forecasts from the
# history before each (bench/plan_r_forecast.R), and titan scores all models alike (--compare).
# Prints MASE, pinball at 0.05/0.95, 90% coverage and seconds per forecast per model, then
# per scored horizon the mean over the four series (bench/plan_horizon_summary.py).
#
#   [PROPHET_CHROOT=DIR] bash bench/plan_bench.sh [BUILD_DIR] [R_MODELS_1H] [R_MODELS_10M]
# Defaults: build/release; every R model at 1 h steps; at 10 min steps the ones that finish in
# minutes (tbats and auto.arima with Fourier terms take hours there). Needs Rscript with
# r-cran-forecast. With PROPHET_CHROOT (a root tree from bench/prophet_chroot.sh; needs root),
# Prophet forecasts the same origins inside it (bench/plan_prophet.R) and is scored beside R's
# models, with titan's speed ratio to it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
models_1h=${2:-r_snaive,r_stlf,r_stlf_arima,r_tbats,r_arima_fourier}
models_10m=${3:-r_snaive,r_stlf}
titan="$build/tools/titan/titan"
prophet_root=${PROPHET_CHROOT:-}
# With Prophet the working directory lies inside the chroot, so the exports are visible there too
# (as ${tmp#$prophet_root}).
tmp=$(mktemp -d "$prophet_root/tmp/titan-plan-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [[ -n $prophet_root ]]; then
  cp bench/plan_prophet.R "$tmp/"
  # R reads /proc (CPU counts, /proc/stat); mount it for the run if the tree has none.
  if ! mountpoint -q "$prophet_root/proc"; then
    mount -t proc proc "$prophet_root/proc"
    trap 'rm -rf "$tmp"; umount "$prophet_root/proc"' EXIT
  fi
fi
for vc in vc3sl vc6YE vchbv vcpDC; do
  for scored in "10m 1d $models_10m" "1h 7d $models_1h"; do
    read -r step horizon models <<<"$scored"
    csv=../shared/data/fleet/helios/${vc}_cluster_sequence.csv
    # One forecast at a time (--threads 1), as R and Prophet run: seconds per forecast compare.
    args=(plan demand "$csv" --value running_gpu_num+pending_gpu_num --step "$step"
      --horizon "$horizon" --backtest --threads 1)
    dir="$tmp/$vc-$step"
    "$titan" "${args[@]}" --export "$dir" >/dev/null
    Rscript bench/plan_r_forecast.R "$dir" "$models" "$dir/r.csv" "$dir/r_times.csv" 2>"$dir/r.log"
    compare=(--compare "$dir/r.csv")
    if [[ -n $prophet_root ]]; then
      inside=${dir#"$prophet_root"}
      chroot "$prophet_root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
        Rscript "${tmp#"$prophet_root"}/plan_prophet.R" "$inside" prophet "$inside/prophet.csv" \
        "$inside/prophet_times.csv" 2>"$dir/prophet.log"
      compare+=(--compare "$dir/prophet.csv")
    fi
    "$titan" "${args[@]}" "${compare[@]}" --json "$tmp/$vc-$step.json" >/dev/null
    python3 - "$vc" "$step" "$horizon" "$tmp/$vc-$step.json" "$dir"/*times.csv <<'PY'
import csv, json, sys
vc, step, horizon, path, *times = sys.argv[1:]
b = json.load(open(path))
seconds = {}
for row in (row for t in times for row in csv.DictReader(open(t))):
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
if "prophet" in seconds:
    ratio = (sum(seconds["prophet"]) / len(seconds["prophet"]) /
             b["models"][b["default_model"]]["seconds_per_forecast"])
    print(f"  {b['default_model']} is {ratio:.0f}x faster than prophet per forecast")
PY
  done
done
# The issue's goals are per scored horizon: the mean over the four series of each.
python3 bench/plan_horizon_summary.py "$tmp"/*.json
