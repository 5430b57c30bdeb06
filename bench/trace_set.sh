# Sourced by bench/trace_bench.sh and bench/trace_split_bench.sh: ROOT, BUILD (from $1), SRC (the
# real V100 rank) and SET, the 8-rank set built from it once in /tmp by bench/trace_make_set.py
# (rank 5 arrives 2 ms late at every NCCL kernel).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build/release}"
SRC="$ROOT/../shared/data/traces/hta_df_index_resolver_v100_ddp/df_index_resolver.json.gz"
SET=/tmp/titan_trace_bench_set
[[ -f "$SRC" ]] || { echo "real trace not found: $SRC" >&2; exit 1; }
if [[ ! -f "$SET/rank7.json.gz" ]]; then
  echo "building the 8-rank set in $SET (once)..." >&2
  /usr/bin/python3 "$ROOT/bench/trace_make_set.py" "$SRC" "$SET" --ranks 8 --late-rank 5 --late-us 2000
fi
