// StepTracker: turns the training processes' events into signals.
//   titan_step_duration_seconds{rank}        gauge, one sample per finished step (detectors watch
//   it) titan_steps_total{rank}                  counter titan_straggler_score{rank} gauge: robust
//   lateness score against the node's peers
//                                            (refreshed at most every 250 ms of event time)
//   titan_step_lateness_seconds{rank}        gauge: median lateness against the peers
//   titan_checkpoint_duration_seconds{rank}  gauge, one sample per checkpoint (blocking time)
//   titan_checkpoint_blocking_seconds_total{rank}, titan_checkpoint_written_bytes_total{rank}
//   titan_app_events_total{kind}
//   titan_ranks_evicted_total                idle ranks dropped from the full rank table
//   titan_rank_events_dropped_total{reason}  events of a rank that could not be tracked:
//                                            rank_table_full (max_ranks ranks, none idle for
//                                            kRankIdleNs) or series_limit (the registry's
//                                            max_series reached); logged, rate-limited
// and registers the senders' pids with WatchedProcesses (hello) so the process collector samples
// them. A step's duration is step_end - step_begin of the same rank and step; an end without its
// begin is counted (titan_app_events_unmatched_total) and ignored. Where a rank marks the end of
// its local compute (mark "compute", before its collectives), the straggler score compares that
// compute time with the peers', as titan run does: under data parallelism every rank waits in
// the all-reduce for the slowest, so whole step times are alike and only compute tells the
// straggler apart; without the mark, whole steps are compared.
//
// The rank table holds at most max_ranks ranks (7 series each). When it is full, or the registry
// has no room for a new rank's series, the new rank takes the place of the least recently heard
// rank if that one has been silent for kRankIdleNs (its series are retired from the registry, so
// a long-lived agent that sees many jobs' ranks keeps working); otherwise the new rank's events
// are dropped and counted. A flood of fake ranks thus
// blinds the agent to new ranks for at most kRankIdleNs after the flood stops.
//
// Thread safety: OnEvent is called from the event receiver thread only; not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <unordered_map>

#include "src/agent/event_log.h"
#include "src/base/log.h"
#include "src/client/wire_parse.h"
#include "src/collectors/watched_processes.h"
#include "src/detect/straggler.h"
#include "src/metrics/registry.h"

namespace titan {

// An accepted datagram (wire_parse.h) as the agent stores and tracks it; the name is truncated to
// kNameBytes - 1 and NUL-terminated.
AppEvent ToAppEvent(const wire::ParsedEvent& event);

class StepTracker {
 public:
  static constexpr size_t kMaxRanks = 1024;  // as many as WatchedProcesses::kMaxProcesses
  // A rank silent this long (receive time) may be evicted from a full table.
  static constexpr int64_t kRankIdleNs = 60LL * 1'000'000'000;

  // `max_ranks` >= 1 (tests use small tables).
  StepTracker(MetricRegistry& registry, WatchedProcesses& processes, size_t max_ranks = kMaxRanks);
  // `receive_ns` is when the agent received the event on a monotonic clock (idle ranks are judged
  // by it, not by the sender's time_ns, which a sender chooses).
  void OnEvent(const AppEvent& event, int64_t receive_ns);

  size_t rank_count() const { return ranks_.size(); }

 private:
  struct RankState {
    int64_t step_begin_step = -1;
    int64_t step_begin_ns = 0;
    int64_t compute_ns = -1;  // step_begin -> mark "compute" of the step in progress; -1: none
    int64_t checkpoint_begin_ns = 0;
    int32_t step_pid = 0;  // the process that sent the rank's last step_begin; 0: unknown
    Series* step_duration = nullptr;
    Series* steps_total = nullptr;
    Series* straggler_score = nullptr;
    Series* lateness = nullptr;
    Series* checkpoint_duration = nullptr;
    Series* checkpoint_total = nullptr;
    Series* checkpoint_bytes = nullptr;
    int64_t last_heard_ns = 0;              // receive time of the newest event
    std::list<int32_t>::iterator lru_node;  // in lru_

    // The series above, in the order of the .cc's kRankSeries table.
    std::array<Series**, 7> AllSeries() {
      return {&step_duration,       &steps_total,      &straggler_score, &lateness,
              &checkpoint_duration, &checkpoint_total, &checkpoint_bytes};
    }
  };
  enum DropReason { kRankTableFull, kSeriesLimit, kDropReasonCount };

  // The rank's state, created (evicting an idle rank when full) on first sight; nullptr when the
  // event must be dropped (counted and logged here).
  RankState* StateFor(int32_t rank, int64_t receive_ns, int64_t time_ns);
  // Creates the rank's series; false (none kept) when the registry refused one.
  bool CreateSeries(int32_t rank, RankState* state);
  void Evict(int32_t rank, int64_t time_ns);
  void Drop(DropReason reason, int32_t rank, int64_t time_ns);
  void UpdateStragglerScores(int64_t time_ns);

  MetricRegistry& registry_;
  WatchedProcesses& processes_;
  StragglerScorer scorer_;
  const size_t max_ranks_;
  std::unordered_map<int32_t, RankState> ranks_;
  std::list<int32_t> lru_;  // ranks, most recently heard first
  Series* unmatched_ = nullptr;
  Series* evicted_ = nullptr;
  Series* dropped_[kDropReasonCount] = {};
  RateLimitedLog drop_log_{10LL * 1'000'000'000};
  int64_t last_scores_ns_ = 0;
  Series* kind_counters_[wire::kMaxKind + 1] = {};
};

}  // namespace titan
