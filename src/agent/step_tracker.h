// StepTracker: turns the training processes' events into signals.
//   titan_step_duration_seconds{rank}        gauge, one sample per finished step (detectors watch
//   it) titan_steps_total{rank}                  counter titan_straggler_score{rank} gauge: robust
//   lateness score against the node's peers
//                                            (refreshed at most every 250 ms of event time)
//   titan_step_lateness_seconds{rank}        gauge: median lateness against the peers
//   titan_checkpoint_duration_seconds{rank}  gauge, one sample per checkpoint (blocking time)
//   titan_checkpoint_blocking_seconds_total{rank}, titan_checkpoint_written_bytes_total{rank}
//   titan_app_events_total{kind}
// and registers the senders' pids with WatchedProcesses (hello) so the process collector samples
// them. A step's duration is step_end - step_begin of the same rank and step; an end without its
// begin is counted (titan_app_events_unmatched_total) and ignored.
//
// Thread safety: OnEvent is called from the event receiver thread only; not thread-safe.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "src/agent/event_log.h"
#include "src/collectors/watched_processes.h"
#include "src/detect/straggler.h"
#include "src/metrics/registry.h"

namespace titan {

class StepTracker {
 public:
  static constexpr size_t kMaxRanks = 4096;

  StepTracker(MetricRegistry& registry, WatchedProcesses& processes);
  void OnEvent(const AppEvent& event);

 private:
  struct RankState {
    int64_t step_begin_step = -1;
    int64_t step_begin_ns = 0;
    int64_t checkpoint_begin_ns = 0;
    Series* step_duration = nullptr;
    Series* steps_total = nullptr;
    Series* straggler_score = nullptr;
    Series* lateness = nullptr;
    Series* checkpoint_duration = nullptr;
    Series* checkpoint_total = nullptr;
    Series* checkpoint_bytes = nullptr;
  };
  RankState* StateFor(int32_t rank);
  void UpdateStragglerScores(int64_t time_ns);

  MetricRegistry& registry_;
  WatchedProcesses& processes_;
  StragglerScorer scorer_;
  std::unordered_map<int32_t, RankState> ranks_;
  Series* unmatched_ = nullptr;
  int64_t last_scores_ns_ = 0;
  Series* kind_counters_[wire::kMaxKind + 1] = {};
};

}  // namespace titan
