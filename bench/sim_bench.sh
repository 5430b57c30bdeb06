#!/usr/bin/env bash
# titan sim: speed and answers side by side with a plain-Python Monte Carlo of the same model
# (Daly 2006: job MTBF 6 h, checkpoint 5 min, restart 10 min, 500 h of work), then the issue's
# performance targets: one replica of 100,000 GPUs over 90 days, and 1,000 replicas on 2 cores.
#
#   bash bench/sim_bench.sh [BUILD_DIR]      (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
sim=("$build/tools/titan/titan" sim)
now() { date +%s.%N; }
replicas=2000

echo "== Daly model, MTBF 6 h, interval 57 min, $replicas replicas (same model, same run)"
t0=$(now)
titan_out=$("${sim[@]}" daly --set failures.causes.0.job_mtbf_hours=6 --set checkpoint.interval=fixed \
  --set checkpoint.interval_minutes=57 --replicas $replicas --threads 1 --json)
t1=$(now)
python_out=$(/usr/bin/python3 bench/sim_daly_python.py $replicas 6 57)
t2=$(now)
titan_days=$(printf '%s' "$titan_out" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)["wall_days"]; print("%.4f %.4f" % (d["mean"], d["ci95"]))')
echo "titan sim (1 thread): wall $titan_days days (mean, ci95)   $(echo "$t1 - $t0" | bc -l | cut -c1-6) s"
echo "python Monte Carlo:   wall $python_out days (mean, ci95)   $(echo "$t2 - $t1" | bc -l | cut -c1-6) s"
echo "speed ratio python/titan: $(echo "($t2 - $t1) / ($t1 - $t0)" | bc -l | cut -c1-6)"

echo "== 100,000 GPUs (12,500 nodes, 390 spares), llama3 failure table, 90 days"
args=(llama3-16k --set cluster.gpus=100000 --set cluster.spares=390 --set job.pipeline_parallel=1
      --set run.duration_days=90)
t0=$(now); "${sim[@]}" "${args[@]}" --replicas 1 --threads 1 > /dev/null; t1=$(now)
echo "1 replica, 1 thread:       $(echo "$t1 - $t0" | bc -l | cut -c1-6) s (target < 1 s)"
t0=$(now); "${sim[@]}" "${args[@]}" --replicas 1000 --threads 2 | grep -E "ETTR|interruptions"; t1=$(now)
echo "1000 replicas, 2 threads:  $(echo "$t1 - $t0" | bc -l | cut -c1-6) s (target < 60 s)"
