#include "src/supervisor/policy.h"

#include <gtest/gtest.h>

namespace titan::supervisor {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

TEST(HangDetector, StartupTimeoutBeforeFirstStep) {
  HangOptions o;
  o.startup_timeout_ns = 5 * kS;
  HangDetector h(o);
  h.Reset({0, 1}, 0);
  EXPECT_FALSE(h.Check(5 * kS).has_value());
  auto v = h.Check(5 * kS + 1);
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->before_first_step);
}

TEST(HangDetector, ThresholdLearnedFromStepIntervals) {
  HangOptions o;
  o.k = 3;
  o.floor_ns = 1 * kS;
  o.min_intervals = 5;
  HangDetector h(o);
  h.Reset({0}, 0);
  EXPECT_EQ(h.ThresholdNs(), 1 * kS);  // floor until enough intervals
  int64_t t = 0;
  for (int s = 0; s < 50; ++s) {
    t += 500 * kMs;
    h.OnStepEnd(0, s, t);
  }
  EXPECT_NEAR(h.P99IntervalNs(), 500.0 * kMs, 1);
  EXPECT_EQ(h.ThresholdNs(), 1500 * kMs);  // 3 x p99 > floor
  EXPECT_FALSE(h.Check(t + 1500 * kMs).has_value());
  auto v = h.Check(t + 1501 * kMs);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->rank, 0);
  EXPECT_FALSE(v->before_first_step);
  EXPECT_EQ(v->threshold_ns, 1500 * kMs);
}

TEST(HangDetector, CheckpointPauseUsesItsOwnTimeout) {
  HangOptions o;
  o.floor_ns = 1 * kS;
  o.checkpoint_timeout_ns = 60 * kS;
  HangDetector h(o);
  h.Reset({0}, 0);
  h.OnStepEnd(0, 1, 100 * kMs);
  h.OnCheckpointBegin(0, 200 * kMs);
  EXPECT_FALSE(h.Check(30 * kS).has_value());
  h.OnProgress(0, 30 * kS);
  EXPECT_TRUE(h.Check(32 * kS).has_value());
}

TEST(StragglerDetector, FlagsThePersistentlySlowRank) {
  StragglerOptions o;
  o.window = 5;
  o.persist = 2;
  StragglerDetector d(o);
  for (int i = 0; i < 5; ++i) {
    d.Add(0, 100 * kMs + i * kMs);
    d.Add(1, 102 * kMs);
    d.Add(2, 160 * kMs);
    d.Add(3, 99 * kMs);
  }
  auto m = d.Medians();
  ASSERT_EQ(m.size(), 4u);
  auto f1 = d.Evaluate(m);
  ASSERT_EQ(f1.size(), 1u);
  EXPECT_EQ(f1[0].rank, 2);
  EXPECT_FALSE(f1[0].persistent);
  auto f2 = d.Evaluate(m);
  ASSERT_EQ(f2.size(), 1u);
  EXPECT_TRUE(f2[0].persistent);
}

TEST(StragglerDetector, EqualRanksAreNotStragglers) {
  StragglerDetector d(StragglerOptions{});
  std::map<int, double> m = {{0, 100e6}, {1, 104e6}, {2, 98e6}, {3, 110e6}};
  EXPECT_TRUE(d.Evaluate(m).empty());
  // 1.5x slower but only by 1 ms: scheduling noise on tiny steps, not a straggler.
  EXPECT_TRUE(d.Evaluate({{0, 2e6}, {1, 3e6}}).empty());
  EXPECT_TRUE(d.Evaluate({{0, 100}}).empty());  // nobody to compare with
}

TEST(StragglerDetector, TwoRanksUseTheRatio) {
  StragglerDetector d(StragglerOptions{});
  auto f = d.Evaluate({{0, 100e6}, {1, 160e6}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rank, 1);
}

TEST(FailureTracker, ExcludesAfterRepeatedFailuresInTheWindow) {
  IsolationOptions o;
  o.max_failures = 2;
  o.window_ns = 60 * kS;
  o.cooldown_ns = 100 * kS;
  FailureTracker t(o);
  t.Record("n1", 0, 0);
  EXPECT_FALSE(t.ShouldExclude("n1", 1));
  t.Record("n1", 1, 70 * kS);  // the first one is out of the window by now
  EXPECT_FALSE(t.ShouldExclude("n1", 70 * kS));
  t.Record("n1", 0, 80 * kS);
  EXPECT_TRUE(t.ShouldExclude("n1", 80 * kS));
  EXPECT_TRUE(t.Excluded("n1", 179 * kS));
  EXPECT_FALSE(t.Excluded("n1", 181 * kS));
  EXPECT_FALSE(t.Excluded("n0", 100 * kS));
}

TEST(RestartBudget, ExponentialBackoffCappedAndBudget) {
  RestartOptions o;
  o.max_restarts = 4;
  o.backoff_base_ns = 1 * kS;
  o.backoff_max_ns = 3 * kS;
  RestartBudget b(o);
  EXPECT_EQ(b.Take(), 1 * kS);
  EXPECT_EQ(b.Take(), 2 * kS);
  EXPECT_EQ(b.Take(), 3 * kS);
  EXPECT_FALSE(b.Exhausted());
  EXPECT_EQ(b.Take(), 3 * kS);
  EXPECT_TRUE(b.Exhausted());
}

TEST(Median, OddEvenEmpty) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
}

}  // namespace
}  // namespace titan::supervisor
