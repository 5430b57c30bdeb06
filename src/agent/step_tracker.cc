#include "src/agent/step_tracker.h"

#include <string>

#include "src/base/clock.h"
#include "src/client/wire_parse.h"

namespace titan {
namespace {

constexpr int64_t kStepInterval = 100 * kNsPerMs;  // sizes recorder rings for step series

const SignalDesc kStepDuration{"titan_step_duration_seconds",
                               "Duration of each training step (step_end - step_begin).",
                               SignalKind::kGauge,
                               {"rank"},
                               SecondsBuckets(),
                               true};
const SignalDesc kStepsTotal{
    "titan_steps_total", "Training steps finished.", SignalKind::kCounter, {"rank"}, {}};
const SignalDesc kStragglerScore{
    "titan_straggler_score",
    "Robust lateness score of a rank against its peers on this node (>3: straggler).",
    SignalKind::kGauge,
    {"rank"},
    {}};
const SignalDesc kLateness{"titan_step_lateness_seconds",
                           "Median step time of a rank minus the median of its peers.",
                           SignalKind::kGauge,
                           {"rank"},
                           {}};
const SignalDesc kCheckpointDuration{
    "titan_checkpoint_duration_seconds",
    "Blocking time of each checkpoint (checkpoint_end - checkpoint_begin).",
    SignalKind::kGauge,
    {"rank"},
    SecondsBuckets()};
const SignalDesc kCheckpointTotal{"titan_checkpoint_blocking_seconds_total",
                                  "Training time spent blocked in checkpoints.",
                                  SignalKind::kCounter,
                                  {"rank"},
                                  {}};
const SignalDesc kCheckpointBytes{"titan_checkpoint_written_bytes_total",
                                  "Bytes reported written by checkpoints.",
                                  SignalKind::kCounter,
                                  {"rank"},
                                  {}};
const SignalDesc kAppEvents{"titan_app_events_total",
                            "Events received from training processes, by kind.",
                            SignalKind::kCounter,
                            {"kind"},
                            {}};
const SignalDesc kUnmatched{"titan_app_events_unmatched_total",
                            "step_end / checkpoint_end events without their begin event.",
                            SignalKind::kCounter,
                            {},
                            {}};

}  // namespace

StepTracker::StepTracker(MetricRegistry& registry, WatchedProcesses& processes)
    : registry_(registry),
      processes_(processes),
      unmatched_(registry.GetOrCreate(kUnmatched, {}, 0)) {
  for (uint16_t k = 1; k <= wire::kMaxKind; ++k) {
    kind_counters_[k] = registry.GetOrCreate(
        kAppEvents, {std::string(wire::EventKindName(static_cast<wire::EventKind>(k)))}, 0);
  }
}

StepTracker::RankState* StepTracker::StateFor(int32_t rank) {
  auto it = ranks_.find(rank);
  if (it != ranks_.end()) return &it->second;
  if (ranks_.size() >= kMaxRanks) return nullptr;
  RankState& s = ranks_[rank];
  const LabelValues labels{std::to_string(rank)};
  s.step_duration = registry_.GetOrCreate(kStepDuration, labels, kStepInterval);
  s.steps_total = registry_.GetOrCreate(kStepsTotal, labels, 0);
  s.straggler_score = registry_.GetOrCreate(kStragglerScore, labels, kStepInterval);
  s.lateness = registry_.GetOrCreate(kLateness, labels, kStepInterval);
  s.checkpoint_duration = registry_.GetOrCreate(kCheckpointDuration, labels, kStepInterval);
  s.checkpoint_total = registry_.GetOrCreate(kCheckpointTotal, labels, 0);
  s.checkpoint_bytes = registry_.GetOrCreate(kCheckpointBytes, labels, 0);
  return &s;
}

void StepTracker::OnEvent(const AppEvent& e) {
  const auto kind_index = static_cast<uint16_t>(e.kind);
  if (kind_index <= wire::kMaxKind && kind_counters_[kind_index]) {
    kind_counters_[kind_index]->AddCounter(e.time_ns, 1);
  }
  if (e.pid > 0) {
    if (e.kind == wire::EventKind::kGoodbye) {
      processes_.Forget(e.pid);
    } else if (e.kind == wire::EventKind::kHello) {
      processes_.Watch(e.pid, e.rank);
    }
  }
  RankState* s = StateFor(e.rank);
  if (s == nullptr) return;
  switch (e.kind) {
    case wire::EventKind::kStepBegin:
      s->step_begin_step = e.step;
      s->step_begin_ns = e.time_ns;
      break;
    case wire::EventKind::kStepEnd: {
      if (s->step_begin_ns == 0 || s->step_begin_step != e.step || e.time_ns < s->step_begin_ns) {
        if (unmatched_) unmatched_->AddCounter(e.time_ns, 1);
        break;
      }
      const int64_t duration_ns = e.time_ns - s->step_begin_ns;
      s->step_begin_step = -1;
      s->step_begin_ns = 0;
      if (s->step_duration) s->step_duration->RecordGauge(e.time_ns, NsToSeconds(duration_ns));
      if (s->steps_total) s->steps_total->AddCounter(e.time_ns, 1);
      if (e.rank >= 0) scorer_.Observe(e.rank, e.step, duration_ns).IgnoreError();
      // Scores() is O(window x ranks): refresh the gauges at most every 250 ms of event time.
      if (e.time_ns - last_scores_ns_ >= 250 * kNsPerMs) {
        last_scores_ns_ = e.time_ns;
        UpdateStragglerScores(e.time_ns);
      }
      break;
    }
    case wire::EventKind::kCheckpointBegin:
      s->checkpoint_begin_ns = e.time_ns;
      break;
    case wire::EventKind::kCheckpointEnd: {
      if (s->checkpoint_begin_ns == 0 || e.time_ns < s->checkpoint_begin_ns) {
        if (unmatched_) unmatched_->AddCounter(e.time_ns, 1);
        break;
      }
      const double seconds = NsToSeconds(e.time_ns - s->checkpoint_begin_ns);
      s->checkpoint_begin_ns = 0;
      if (s->checkpoint_duration) s->checkpoint_duration->RecordGauge(e.time_ns, seconds);
      if (s->checkpoint_total) s->checkpoint_total->AddCounter(e.time_ns, seconds);
      if (s->checkpoint_bytes && e.value > 0) {
        s->checkpoint_bytes->AddCounter(e.time_ns, static_cast<double>(e.value));
      }
      break;
    }
    default:
      break;
  }
}

void StepTracker::UpdateStragglerScores(int64_t time_ns) {
  for (const RankScore& score : scorer_.Scores()) {
    auto it = ranks_.find(static_cast<int32_t>(score.rank));
    if (it == ranks_.end()) continue;
    if (it->second.straggler_score) it->second.straggler_score->RecordGauge(time_ns, score.score);
    if (it->second.lateness) {
      it->second.lateness->RecordGauge(time_ns, NsToSeconds(score.median_lateness_ns));
    }
  }
}

}  // namespace titan
