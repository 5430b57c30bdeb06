// Cross-rank analysis over the per-rank summaries: collectives matched across ranks (process
// group + sequence number where the trace has them, else process group + collective + call
// order), each rank's arrival skew and wait, who was last, stragglers (the ranks that make the
// others wait, with the time they cost the job per step) and the spread of step times.
//
// Clocks: Kineto traces carry wall-clock time, used as is. Traces without a shared clock (the
// legacy profiler's timestamps start at each process's profiler start) are aligned on the
// collectives themselves: a collective ends on every rank at about the same moment, so each
// rank's offset to the lowest rank is the median difference of matched collectives' end times.
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/trace/analyses/rank_summary.h"

namespace titan::trace {

struct MatchedCollective {
  std::string process_group;
  std::string collective;
  int64_t key = 0;  // seq or ordinal
  int64_t step = -1;
  int last_rank = -1;
  int64_t skew_ns = 0;       // last arrival minus first arrival
  int64_t last_cost_ns = 0;  // last arrival minus the second-to-last: what the last rank alone cost
  std::vector<std::pair<int, int64_t>> wait_ns;  // (rank, last arrival minus own arrival)
};

struct RankWaits {
  int rank = -1;
  int64_t matched = 0;
  int64_t times_last = 0;
  int64_t wait_ns = 0;  // total time this rank waited for later ranks
  int64_t cost_ns = 0;  // total time others waited because this rank was last
};

struct Straggler {
  int rank = -1;
  int64_t times_last = 0;
  int64_t matched = 0;
  int64_t cost_per_step_ns = 0;
};

struct StepSpread {
  int64_t step = -1;
  int64_t min_ns = 0, max_ns = 0;
  int fastest_rank = -1, slowest_rank = -1;
};

// Ranks x collectives arrival skew, for heatmaps: the matched collectives in (step, key) order,
// grouped into at most kMaxSkewColumns consecutive columns. wait_ns[row][column] is the longest
// wait of ranks[row] for the last arrival in that column's collectives (-1: not in any of them).
struct SkewMatrix {
  static constexpr size_t kMaxSkewColumns = 200;
  std::vector<int> ranks;
  std::vector<int64_t> column_step;         // the step of each column's first collective
  std::vector<int64_t> column_collectives;  // how many collectives each column holds
  std::vector<std::vector<int64_t>> wait_ns;
};

struct CrossRankResult {
  std::string clock;                                     // how the ranks' clocks were related
  std::vector<std::pair<int, int64_t>> clock_offset_ns;  // (rank, added to its local time)
  int64_t matched = 0;
  int64_t unmatched = 0;  // calls seen on only one rank
  int64_t steps = 0;
  std::vector<MatchedCollective> worst;  // largest skew first
  std::vector<RankWaits> ranks;
  std::vector<Straggler> stragglers;
  std::vector<StepSpread> step_spread;
  SkewMatrix skew;
};

CrossRankResult AnalyseAcrossRanks(const std::vector<RankSummary>& ranks, int top_collectives);

}  // namespace titan::trace
