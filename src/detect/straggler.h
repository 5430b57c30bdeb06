// StragglerScorer: which rank on this node is persistently late, from the step events that the
// training processes send (one (rank, step, duration) per rank per step). Not a Detector: it
// compares ranks with each other rather than a signal with its own past, and needs no
// collective: each rank's lateness at step s is its duration minus the median duration of its
// peers (the other ranks that reported step s), computed only for steps at least two ranks
// reported.
//
// Per rank, over the last `window_steps` steps (by step number, counted back from the highest
// step seen by any rank):
//   median_lateness_ns = median of the rank's lateness;
//   score = median_lateness_ns / scale, scale = 1.4826 * MAD of the peers' lateness samples in
//           the window (robust sigma of how late ranks normally are), floored at
//           min_scale_fraction * the median step duration (a noise-free job has scale 0);
//   is_straggler = steps_seen >= min_steps && score > k &&
//                  median_lateness_ns >= min_lateness_fraction * median step duration.
// With more than kExactPeerRanks ranks the scale is the MAD of all ranks' lateness (including
// the rank's own, less than 1/16 of the pool) instead of leave-one-out, to keep Scores() fast.
//
// Out-of-order reports are fine; a report for a step older than the window, a repeated report
// (the last one wins) and missing steps are tolerated. Memory: at most max_ranks ranks, each with
// a ring of window_steps (step, duration) slots, allocated when the rank first reports.
// Observe() is O(1) (a hash lookup and a store); Scores() is O(window * ranks * log ranks) plus
// the leave-one-out MADs, meant for scrape time.
// Thread safety: none; callers serialise (the agent's event thread owns it).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "src/base/status.h"

namespace titan {

struct StragglerScorerOptions {
  int64_t window_steps = 64;            // steps scored, 2 .. 1e5
  int64_t max_ranks = 4096;             // distinct ranks tracked, 1 .. 1e6
  double k = 3.5;                       // robust z threshold
  int64_t min_steps = 5;                // steps with peers before a rank can be flagged
  double min_lateness_fraction = 0.05;  // of the median step duration, to be flagged
  double min_scale_fraction = 0.01;     // floor of the scale, of the median step duration
};

struct RankScore {
  int64_t rank = 0;
  double score = 0;                // robust z of the median lateness (0 without data)
  int64_t median_lateness_ns = 0;  // positive: slower than the peers' median
  int64_t steps_seen = 0;          // steps in the window where the rank had peers
  bool is_straggler = false;
};

class StragglerScorer {
 public:
  static constexpr int64_t kExactPeerRanks = 16;

  // Preconditions (checked): the ranges in StragglerScorerOptions.
  explicit StragglerScorer(const StragglerScorerOptions& options = {});

  // Records that `rank` took `duration_ns` for `step`. INVALID_ARGUMENT for a negative rank, step
  // or duration; RESOURCE_EXHAUSTED for a new rank beyond max_ranks (the report is dropped).
  // Steps older than the window are dropped silently (counted in stale_reports()).
  Status Observe(int64_t rank, int64_t step, int64_t duration_ns);

  // Forgets `rank` and its reports (a rank that left the node, or whose process was replaced and
  // starts a new timeline), freeing its place among max_ranks. The window then ends at the highest
  // step the remaining ranks reported, so a job that starts over at step 0 after its ranks were
  // forgotten is scored, not dropped as stale. No-op for a rank never seen. O(ranks).
  void Forget(int64_t rank);

  // One entry per rank seen, ordered by rank.
  std::vector<RankScore> Scores() const;

  int64_t ranks() const { return static_cast<int64_t>(ranks_.size()); }
  int64_t stale_reports() const { return stale_reports_; }

 private:
  struct Slot {
    int64_t step = -1;
    int64_t duration_ns = 0;
  };
  struct RankState {
    int64_t rank;
    std::vector<Slot> slots;  // window_steps slots, indexed by step % window_steps
    int64_t max_step = -1;    // the highest step the rank reported
  };

  StragglerScorerOptions options_;
  std::unordered_map<int64_t, int32_t> index_;  // rank -> position in ranks_
  std::vector<RankState> ranks_;
  int64_t max_step_ = -1;
  int64_t stale_reports_ = 0;
};

}  // namespace titan
