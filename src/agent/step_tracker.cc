#include "src/agent/step_tracker.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "src/base/check.h"
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
const SignalDesc kRanksEvicted{"titan_ranks_evicted_total",
                               "Idle ranks dropped from the agent's full rank table.",
                               SignalKind::kCounter,
                               {},
                               {}};
const SignalDesc kRankEventsDropped{
    "titan_rank_events_dropped_total",
    "Events of ranks the agent could not track, by reason (rank_table_full, series_limit).",
    SignalKind::kCounter,
    {"reason"},
    {}};
// The series of one rank, in the order of StepTracker::RankState::AllSeries().
struct RankSeriesSpec {
  const SignalDesc* desc;
  int64_t interval_ns;  // sizes the recorder ring; 0 for counters (not recorded)
};
const RankSeriesSpec kRankSeries[] = {{&kStepDuration, kStepInterval},
                                      {&kStepsTotal, 0},
                                      {&kStragglerScore, kStepInterval},
                                      {&kLateness, kStepInterval},
                                      {&kCheckpointDuration, kStepInterval},
                                      {&kCheckpointTotal, 0},
                                      {&kCheckpointBytes, 0}};
constexpr const char* kDropReasonNames[] = {"rank_table_full", "series_limit"};
const SignalDesc kUnmatched{"titan_app_events_unmatched_total",
                            "step_end / checkpoint_end events without their begin event.",
                            SignalKind::kCounter,
                            {},
                            {}};

// The straggler score describes the ranks' last steps, as titan run's straggler check does (its
// window of 10 compute times): the agent scores it against the transient it is in, and a slowdown
// of 20 steps is invisible in a window of 64 (the median lateness stays a healthy one).
StragglerScorerOptions ScorerOptions() {
  StragglerScorerOptions options;
  options.window_steps = 10;
  return options;
}

}  // namespace

AppEvent ToAppEvent(const wire::ParsedEvent& e) {
  AppEvent a{};
  a.time_ns = e.time_ns;
  a.step = e.step;
  a.value = e.value;
  a.rank = e.rank;
  a.pid = e.pid();
  a.kind = e.kind;
  std::memcpy(a.name, e.name_bytes.data(), std::min<size_t>(e.name_size, wire::kNameBytes - 1));
  return a;
}

StepTracker::StepTracker(MetricRegistry& registry, WatchedProcesses& processes, size_t max_ranks)
    : registry_(registry),
      processes_(processes),
      scorer_(ScorerOptions()),
      max_ranks_(max_ranks),
      unmatched_(registry.GetOrCreate(kUnmatched, {}, 0)),
      evicted_(registry.GetOrCreate(kRanksEvicted, {}, 0)) {
  TITAN_CHECK(max_ranks_ >= 1) << "StepTracker needs room for one rank";
  for (int r = 0; r < kDropReasonCount; ++r) {
    dropped_[r] = registry.GetOrCreate(kRankEventsDropped, {kDropReasonNames[r]}, 0);
  }
  for (uint16_t k = 1; k <= wire::kMaxKind; ++k) {
    kind_counters_[k] = registry.GetOrCreate(
        kAppEvents, {std::string(wire::EventKindName(static_cast<wire::EventKind>(k)))}, 0);
  }
}

StepTracker::RankState* StepTracker::StateFor(int32_t rank, int64_t receive_ns, int64_t time_ns) {
  if (auto it = ranks_.find(rank); it != ranks_.end()) {
    it->second.last_heard_ns = receive_ns;
    lru_.splice(lru_.begin(), lru_, it->second.lru_node);
    return &it->second;
  }
  // A full table, or a registry without room for the rank's series: the least recently heard
  // rank makes room if it has been idle long enough.
  auto evict_idle = [&] {
    if (lru_.empty() || receive_ns - ranks_.at(lru_.back()).last_heard_ns < kRankIdleNs) {
      return false;
    }
    Evict(lru_.back(), time_ns);
    return true;
  };
  if (ranks_.size() >= max_ranks_ && !evict_idle()) {
    Drop(kRankTableFull, rank, time_ns);
    return nullptr;
  }
  RankState state;
  if (!CreateSeries(rank, &state) && !(evict_idle() && CreateSeries(rank, &state))) {
    Drop(kSeriesLimit, rank, time_ns);
    return nullptr;
  }
  state.last_heard_ns = receive_ns;
  lru_.push_front(rank);
  state.lru_node = lru_.begin();
  return &ranks_.emplace(rank, state).first->second;
}

bool StepTracker::CreateSeries(int32_t rank, RankState* s) {
  const LabelValues labels{std::to_string(rank)};
  const std::array<Series**, 7> all = s->AllSeries();
  bool complete = true;
  for (size_t i = 0; i < all.size(); ++i) {
    *all[i] = registry_.GetOrCreate(*kRankSeries[i].desc, labels, kRankSeries[i].interval_ns);
    complete &= *all[i] != nullptr;
  }
  if (!complete) {
    // A rank with half its series would be silently half-blind: give back what was made.
    for (Series** p : all) registry_.Retire(*p);
  }
  return complete;
}

void StepTracker::Evict(int32_t rank, int64_t time_ns) {
  auto it = ranks_.find(rank);
  RankState& s = it->second;
  // When the registry already keeps max_retired_series, a series stays live (and counted).
  for (Series** p : s.AllSeries()) registry_.Retire(*p);
  lru_.erase(s.lru_node);
  ranks_.erase(it);
  if (rank >= 0) scorer_.Forget(rank);
  if (evicted_) evicted_->AddCounter(time_ns, 1);
}

void StepTracker::Drop(DropReason reason, int32_t rank, int64_t time_ns) {
  if (dropped_[reason]) dropped_[reason]->AddCounter(time_ns, 1);
  drop_log_.Log(LogLevel::kWarning, "agent",
                "events of rank {} dropped ({}): the agent tracks {} of at most {} ranks, none "
                "silent for {} s, and {} series (--max-series); see "
                "titan_rank_events_dropped_total",
                rank, kDropReasonNames[reason], ranks_.size(), max_ranks_,
                kRankIdleNs / kNsPerSecond, registry_.series_count());
}

void StepTracker::OnEvent(const AppEvent& e, int64_t receive_ns) {
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
  RankState* s = StateFor(e.rank, receive_ns, e.time_ns);
  if (s == nullptr) return;
  switch (e.kind) {
    case wire::EventKind::kStepBegin:
      // A new process of the rank (a restart, or the next job on this node) starts a new timeline:
      // its step numbers start over, and the last process's steps are no peers of its own. Only
      // step events count, so a forked helper that marks or checkpoints changes nothing.
      if (e.pid > 0 && s->step_pid > 0 && e.pid != s->step_pid && e.rank >= 0) {
        scorer_.Forget(e.rank);
      }
      if (e.pid > 0) s->step_pid = e.pid;
      s->step_begin_step = e.step;
      s->step_begin_ns = e.time_ns;
      s->compute_ns = -1;
      break;
    case wire::EventKind::kMark:
      // The rank's local compute of the step in progress ended (marks carry no step).
      if (s->step_begin_ns != 0 && e.time_ns >= s->step_begin_ns &&
          std::string_view(e.name) == "compute") {
        s->compute_ns = e.time_ns - s->step_begin_ns;
      }
      break;
    case wire::EventKind::kStepEnd: {
      if (s->step_begin_ns == 0 || s->step_begin_step != e.step || e.time_ns < s->step_begin_ns) {
        if (unmatched_) unmatched_->AddCounter(e.time_ns, 1);
        break;
      }
      const int64_t duration_ns = e.time_ns - s->step_begin_ns;
      const int64_t compared_ns = s->compute_ns >= 0 ? s->compute_ns : duration_ns;
      s->step_begin_step = -1;
      s->step_begin_ns = 0;
      s->compute_ns = -1;
      if (s->step_duration) s->step_duration->RecordGauge(e.time_ns, NsToSeconds(duration_ns));
      if (s->steps_total) s->steps_total->AddCounter(e.time_ns, 1);
      if (e.rank >= 0) scorer_.Observe(e.rank, e.step, compared_ns).IgnoreError();
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
