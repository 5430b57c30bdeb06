// StepTracker's rank table under hostile and long-lived use (issue 15 #6): a flood of fake ranks
// must not silently blind the agent to real ones, idle ranks make room, and every drop is counted
// by reason. Receive times are passed in, so nothing here depends on the machine's speed.
#include "src/agent/step_tracker.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan {
namespace {

constexpr int64_t kT0 = 1'800'000'000LL * kNsPerSecond;  // sender clock
constexpr int64_t kR0 = 1'000 * kNsPerSecond;            // receive (monotonic) clock

AppEvent Event(wire::EventKind kind, int32_t rank, int64_t step = 0, int64_t time_ns = kT0) {
  AppEvent e{};
  e.time_ns = time_ns;
  e.step = step;
  e.rank = rank;
  e.pid = 0;
  e.kind = kind;
  return e;
}

double Counter(MetricRegistry& registry, const std::string& key) {
  Series* s = registry.Find(key);
  return s == nullptr ? -1 : s->CounterValue();
}

const char kTableFull[] = "titan_rank_events_dropped_total{reason=\"rank_table_full\"}";
const char kSeriesLimit[] = "titan_rank_events_dropped_total{reason=\"series_limit\"}";

class StepTrackerTest : public ::testing::Test {
 protected:
  static RegistryOptions Options() {
    RegistryOptions options;
    options.recorder_budget_bytes = 1 << 20;
    return options;
  }
  MetricRegistry registry_{Options()};
  WatchedProcesses processes_;
};

TEST_F(StepTrackerTest, AFloodOfFakeRanksDelaysARealRankOnlyUntilTheyAreIdle) {
  constexpr size_t kMaxRanks = 8;
  StepTracker tracker(registry_, processes_, kMaxRanks);
  for (int32_t r = 0; r < static_cast<int32_t>(kMaxRanks); ++r) {
    tracker.OnEvent(Event(wire::EventKind::kHello, 100'000 + r), kR0);
  }
  // The real rank 0 arrives during the flood: dropped, but counted (it used to vanish silently).
  tracker.OnEvent(Event(wire::EventKind::kHello, 0), kR0 + kNsPerSecond);
  EXPECT_EQ(Counter(registry_, kTableFull), 1);
  EXPECT_EQ(registry_.Find("titan_steps_total{rank=\"0\"}"), nullptr);
  EXPECT_EQ(tracker.rank_count(), kMaxRanks);

  // One fake rank speaks again: the others are less recently heard.
  tracker.OnEvent(Event(wire::EventKind::kHello, 100'000), kR0 + 30 * kNsPerSecond);
  // Once the flood has been silent for the idle time, rank 0 takes the oldest place.
  const int64_t later = kR0 + StepTracker::kRankIdleNs + 2 * kNsPerSecond;
  tracker.OnEvent(Event(wire::EventKind::kStepBegin, 0, 7, kT0), later);
  tracker.OnEvent(Event(wire::EventKind::kStepEnd, 0, 7, kT0 + 20 * kNsPerMs), later);
  EXPECT_EQ(Counter(registry_, "titan_steps_total{rank=\"0\"}"), 1);
  EXPECT_EQ(Counter(registry_, "titan_ranks_evicted_total"), 1);
  EXPECT_EQ(registry_.Find("titan_steps_total{rank=\"100001\"}"), nullptr);  // retired
  EXPECT_NE(registry_.Find("titan_steps_total{rank=\"100000\"}"), nullptr);  // heard at 30 s
  EXPECT_EQ(tracker.rank_count(), kMaxRanks);
  EXPECT_EQ(Counter(registry_, kTableFull), 1);
}

TEST_F(StepTrackerTest, ALongLivedAgentKeepsSeeingNewJobsRanks) {
  constexpr size_t kMaxRanks = 4;
  StepTracker tracker(registry_, processes_, kMaxRanks);
  const size_t base_series = registry_.series_count();
  // 50 jobs of 4 ranks each, each job's ranks new to the node, one job after another.
  for (int job = 0; job < 50; ++job) {
    const int64_t when = kR0 + job * 2 * StepTracker::kRankIdleNs;
    for (int32_t r = 0; r < 4; ++r) {
      const int32_t rank = job * 4 + r;
      tracker.OnEvent(Event(wire::EventKind::kStepBegin, rank, 1, kT0), when);
      tracker.OnEvent(Event(wire::EventKind::kStepEnd, rank, 1, kT0 + kNsPerMs), when);
      EXPECT_EQ(Counter(registry_, fmt::format("titan_steps_total{{rank=\"{}\"}}", rank)), 1)
          << rank;
    }
  }
  EXPECT_EQ(Counter(registry_, kTableFull), 0);
  EXPECT_EQ(Counter(registry_, "titan_ranks_evicted_total"), 49 * 4);
  // Live series stay those of one job; the rest are retired.
  EXPECT_EQ(registry_.series_count(), base_series + 4 * 7);
  // A rank seen again is revived with its totals.
  tracker.OnEvent(Event(wire::EventKind::kStepBegin, 0, 2, kT0),
                  kR0 + 200 * StepTracker::kRankIdleNs);
  tracker.OnEvent(Event(wire::EventKind::kStepEnd, 0, 2, kT0 + kNsPerMs),
                  kR0 + 200 * StepTracker::kRankIdleNs);
  EXPECT_EQ(Counter(registry_, "titan_steps_total{rank=\"0\"}"), 2);
}

TEST(StepTrackerSeriesLimitTest, ARankWithoutRoomForItsSeriesIsCountedNotHalfTracked) {
  RegistryOptions options;
  options.recorder_budget_bytes = 0;
  options.max_series = 0;
  MetricRegistry probe(options);
  WatchedProcesses processes;
  {
    // How many series the tracker's own counters take, then room for them plus 3 more.
    StepTracker sizing(probe, processes);
  }
  options.max_series = probe.dropped_series() + 3;
  MetricRegistry registry(options);
  StepTracker tracker(registry, processes);
  tracker.OnEvent(Event(wire::EventKind::kHello, 5), kR0);
  EXPECT_EQ(Counter(registry, kSeriesLimit), 1);
  EXPECT_EQ(tracker.rank_count(), 0u);
  EXPECT_EQ(registry.Find("titan_step_duration_seconds{rank=\"5\"}"), nullptr);
  EXPECT_GT(registry.dropped_series(), 0u);
}

// Under data parallelism every rank waits in the all-reduce for the slowest: whole steps take the
// same time on every rank, and only the compute marks tell the straggler (rank 3, computing in
// 24 ms where its peers take 9 ms) apart. The agent scores what titan run scores.
// Four ranks of one job (processes first_pid.. first_pid+3) run `steps` steps from step 0; each
// marks its compute, `slow_rank` after 24 ms and its peers after 9 ms; the all-reduce ends for
// everyone when the slowest arrives. Returns the event time after the last step.
int64_t RunJob(StepTracker& tracker, int32_t first_pid, int64_t steps, int32_t slow_rank,
               int64_t t) {
  for (int64_t step = 0; step < steps; ++step) {
    for (int32_t rank = 0; rank < 4; ++rank) {
      AppEvent begin = Event(wire::EventKind::kStepBegin, rank, step, t);
      begin.pid = first_pid + rank;
      tracker.OnEvent(begin, kR0);
      AppEvent mark =
          Event(wire::EventKind::kMark, rank, -1, t + (rank == slow_rank ? 24 : 9) * kNsPerMs);
      mark.pid = first_pid + rank;
      std::snprintf(mark.name, sizeof(mark.name), "compute");
      tracker.OnEvent(mark, kR0);
      AppEvent end = Event(wire::EventKind::kStepEnd, rank, step, t + 30 * kNsPerMs + rank);
      end.pid = first_pid + rank;
      tracker.OnEvent(end, kR0);
    }
    t += 300 * kNsPerMs;
  }
  return t;
}

double LastStragglerScore(MetricRegistry& registry, int rank, int64_t t) {
  Series* s = registry.Find(fmt::format("titan_straggler_score{{rank=\"{}\"}}", rank));
  if (s == nullptr) return -1.0;
  const WindowStats w = s->Window(t, Series::kMaxWindowSeconds);
  return w.count == 0 ? -1.0 : w.last;
}

TEST_F(StepTrackerTest, ComputeMarksNameTheStragglerThatWholeStepsHide) {
  StepTracker tracker(registry_, processes_);
  const int64_t t = RunJob(tracker, 100, 40, 3, kT0);
  EXPECT_GT(LastStragglerScore(registry_, 3, t), 3.5) << "rank 3 computes 2.7x longer";
  for (int rank = 0; rank < 3; ++rank) EXPECT_LT(LastStragglerScore(registry_, rank, t), 3.5);
}

TEST_F(StepTrackerTest, ANewProcessOfARankStartsANewTimeline) {
  // A healthy job of 100 steps, then a second job (new processes of the same ranks) from step 0
  // with rank 3 slow: its steps are neither dropped as older than the first job's window nor
  // outvoted by the first job's healthy steps 30..99 (titan demo's reference and faulty runs).
  StepTracker tracker(registry_, processes_);
  int64_t t = RunJob(tracker, 100, 100, -1, kT0);
  EXPECT_LT(LastStragglerScore(registry_, 3, t), 3.5);
  t = RunJob(tracker, 200, 30, 3, t + kNsPerSecond);
  EXPECT_GT(LastStragglerScore(registry_, 3, t), 3.5) << "the second job's straggler";
  for (int rank = 0; rank < 3; ++rank) EXPECT_LT(LastStragglerScore(registry_, rank, t), 3.5);
}

}  // namespace
}  // namespace titan
