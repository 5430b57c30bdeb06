#!/usr/bin/env bash
# titan predict, measured (bench/RESULTS.md "Predict"):
#  1. coxph and survfit side by side with R's survival package on the same records, each timed
#     inside its own process (R's start-up and CSV reading excluded; titan's JSON field
#     "seconds"), with the numbers they agree on;
#  2. the default model's fit plus a full backtest on the Titan data (wall clock, whole command);
#  3. `predict risk` on a synthetic 100,000-GPU history (bench/predict_make_fleet.py).
#
#   bash bench/predict_bench.sh [BUILD_DIR]     (default build/release; needs Rscript)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
titan="$build/tools/titan/titan"
data=../shared/data/fleet/titan_gpu/gc_full.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== 1. Kaplan-Meier, Cox (cage + node, Efron, robust) and Aalen-Johansen: titan vs R survival"
"$titan" predict survival "$data" --by cage --by node --json "$tmp/t.json" --records "$tmp/r.csv" >/dev/null
Rscript src/predict/r_reference.R "$tmp/r.csv" "$tmp/r.txt" cage node
python3 - "$tmp/t.json" "$tmp/r.txt" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
r = {l.split()[0]: l.split()[1:] for l in open(sys.argv[2])}
ts = t["seconds"]
rows = [("survfit (KM, Greenwood, log CI)", ts["kaplan_meier_all"], float(r["seconds_survfit"][0])),
        ("coxph (Efron, robust, 5 terms)", ts["cox"], float(r["seconds_coxph"][0])),
        ("Aalen-Johansen (2 causes)", ts["aalen_johansen"], float(r["seconds_aj"][0]))]
print(f"  {'':34} {'titan s':>9} {'R s':>9} {'R / titan':>10}")
for name, a, b in rows:
    print(f"  {name:34} {a:9.4f} {b:9.3f} {b / max(a, 1e-9):9.0f}x")
coef = [x["coef"] for x in t["cox"]["terms"]]
rc = [float(x) for x in r["cox_coef"]]
print("  max |coef difference|", max(abs(a - b) for a, b in zip(coef, rc)))
PY

echo "== 2. default model + full backtest on the Titan data (37,343 stays)"
for models in "--model cox_history --model cox_batch_age --model kaplan_meier --model repeat_offenders" ""; do
  echo "  models: ${models:-all five}"
  /usr/bin/time -f "  wall %e s, max RSS %M KB" "$titan" predict backtest "$data" --split 2017-01-01 \
    --horizon 30d --every 15d $models --json "$tmp/bt.json" >/dev/null
done

echo "== 3. predict risk for a 100,000-GPU history"
python3 bench/predict_make_fleet.py 100000 3 1 > "$tmp/fleet.jsonl"
echo "  $(wc -l < "$tmp/fleet.jsonl") records, $(du -h "$tmp/fleet.jsonl" | cut -f1)"
/usr/bin/time -f "  wall %e s, max RSS %M KB" "$titan" predict risk "$tmp/fleet.jsonl" \
  --at 2023-01-01 --horizon 30d --json "$tmp/risk.json" >/dev/null
